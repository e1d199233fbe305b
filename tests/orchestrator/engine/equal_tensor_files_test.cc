#include "orchestrator/engine/equal_tensor_files.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

namespace diagnose {
namespace {

namespace fs = std::filesystem;

struct EqualTensorFilesTest : ::testing::Test {
  fs::path root = fs::temp_directory_path() / ("equal-tensor-files-" + std::to_string(::getpid()));
  void SetUp() override { fs::remove_all(root); }
  void TearDown() override { fs::remove_all(root); }

  fs::path write(const std::string& relative, const std::string& bytes) {
    const fs::path path = root / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST_F(EqualTensorFilesTest, EqualTensorFilesOfLaterStepsBecomeLinksToTheFirst) {
  const std::string logits(3 << 20, 'x');  // several read chunks
  const fs::path first = write("steps/a/eager/outputs/tensors/0.npy", logits);
  write("steps/a/eager/dump/tensors/9.npy", std::string(10, 'w'));
  const fs::path repeat = write("steps/a/repeat/outputs/tensors/0.npy", logits);
  std::string differs = logits;
  differs.back() = 'y';  // same size, same start: compared to its last byte
  const fs::path other = write("steps/b/target/outputs/tensors/0.npy", differs);
  const fs::path backend = write("steps/b/eager/outputs/tensors/5.npy", logits);
  const fs::path not_tensor = write("steps/b/eager/log.npy", logits);  // not in a tensors/ folder

  EqualTensorFiles files;
  EqualTensorFiles::Linked a = files.share(root / "steps/a");
  EXPECT_EQ(a.files, 1);
  EXPECT_EQ(a.bytes, static_cast<int64_t>(logits.size()));
  EXPECT_TRUE(fs::equivalent(first, repeat));
  EqualTensorFiles::Linked b = files.share(root / "steps/b");
  EXPECT_EQ(b.files, 1);
  EXPECT_TRUE(fs::equivalent(first, backend));
  EXPECT_FALSE(fs::equivalent(first, other));
  EXPECT_FALSE(fs::equivalent(first, not_tensor));
  EXPECT_EQ(read(backend), logits);
  EXPECT_EQ(read(other), differs);
  EXPECT_EQ(files.total().files, 2);
  EXPECT_FALSE(fs::exists(backend.string() + ".link"));

  EXPECT_EQ(files.share(root / "steps/a").files, 0);  // linked already (a resumed step kept)
  EXPECT_EQ(files.share(root / "steps/missing").files, 0);

  DirectoryUsage usage = directory_usage(root);
  EXPECT_EQ(usage.outputs, static_cast<int64_t>(2 * logits.size()));  // the logits once, the other once
  EXPECT_EQ(usage.dumps, 10);
  EXPECT_EQ(usage.other, static_cast<int64_t>(logits.size()));
}

// An .npy v1.0 file of `descr` and `shape` (Python tuple text) holding `data`.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                bool fortran_order = false) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  const std::string length{static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  return std::string("\x93NUMPY\x01\x00", 8) + length + header + data;
}

TEST_F(EqualTensorFilesTest, TheSameTensorViewedAtAnotherShapeIsStoredOnce) {
  // the logits row of a module-output dump and the final output that is its view
  const std::string data(1 << 20, 'z');
  const fs::path row = write("steps/g/golden-modules/dump/tensors/122.npy", npy("<f4", "(128, 2048)", data));
  const fs::path final_output =
      write("steps/g/golden-modules/outputs/tensors/124.npy", npy("<f4", "(1, 128, 2048)", data));
  const fs::path other_type = write("steps/g/target/outputs/tensors/3.npy", npy("<i4", "(1, 128, 2048)", data));
  const fs::path column_major =
      write("steps/g/target/dump/tensors/4.npy", npy("<f4", "(2048, 128)", data, /*fortran_order=*/true));

  EqualTensorFiles files;
  EqualTensorFiles::Linked linked = files.share(root / "steps/g");
  EXPECT_EQ(linked.files, 1);
  EXPECT_TRUE(fs::equivalent(row, final_output));
  EXPECT_EQ(read(final_output), npy("<f4", "(128, 2048)", data));  // read at its record's shape
  EXPECT_FALSE(fs::equivalent(row, other_type));                   // other elements, the same bytes
  EXPECT_FALSE(fs::equivalent(row, column_major));                 // its elements in another order
}

}  // namespace
}  // namespace diagnose
