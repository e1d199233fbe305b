#include "compare/mapped_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compare/npy.h"
#include "compare/tensor.h"
#include "test_files.h"

namespace diagnose::compare {
namespace {

using diagnose::testing::TempDir;

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3.0f;
  return v;
}

TEST(MappedFile, MapsAnyOffsetAndSaysWhatItCovers) {
  TempDir dir;
  std::string bytes(3 * 4096 + 77, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  diagnose::testing::write_bytes(dir / "f", bytes);
  const int fd = ::open((dir / "f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto range = MappedRange::map(fd, 4097, 5000);
  ::close(fd);  // the mapping outlives the descriptor
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(range->data()), 5000), bytes.substr(4097, 5000));
  EXPECT_TRUE(range->covers(4097, 5000));
  EXPECT_TRUE(range->covers(5000, 10));
  EXPECT_FALSE(range->covers(4096, 10));
  EXPECT_FALSE(range->covers(9000, 98));
}

// What another process truncating a dump does to a reader: the next access to the mapped
// pages raises SIGBUS. The guard turns it into false, and guards keep working after it.
TEST(MappedFile, AFileThatShrinksUnderItsMappingIsAnErrorNotACrash) {
  TempDir dir;
  diagnose::testing::write_bytes(dir / "f", std::string(16 * 4096, 'x'));
  const int fd = ::open((dir / "f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  auto range = MappedRange::map(fd, 0, 16 * 4096);
  ASSERT_NE(range, nullptr);
  volatile char seen = 0;
  EXPECT_TRUE(guard_mapped_reads([&] { seen = range->data()[4096]; }));
  EXPECT_EQ(seen, 'x');
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
  EXPECT_FALSE(guard_mapped_reads([&] { seen = range->data()[8 * 4096]; }));
  EXPECT_FALSE(guard_mapped_reads([&] { seen = range->data()[12 * 4096]; }));
  EXPECT_TRUE(guard_mapped_reads([&] { seen = range->data()[100]; }));
}

// view() gives what read() gives: float32 and float16 as the file holds them, the unaligned
// float32 decoded.
TEST(MappedFile, TensorViewsMatchReads) {
  TempDir dir;
  const std::vector<float> values = ramp(3 << 20);  // 12 MB: more than one mapped window
  diagnose::testing::write_npy_f32(dir / "f32.npy", values);
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i) halves[i] = static_cast<uint16_t>(0x3C00 + i % 1000);
  diagnose::testing::write_bytes(
      dir / "f16.npy", diagnose::testing::npy_bytes("<f2", "(" + std::to_string(halves.size()) + ",)", halves.data(),
                                                    halves.size() * 2));
  for (const auto& file : {std::pair<std::string, DType>{"f32.npy", DType::Float32},
                           {"f16.npy", DType::Float16},
                           {"f32_unaligned", DType::Float32}}) {
    const std::string& name = file.first;  // plain names: a lambda below uses them
    const DType stored = file.second;
    TensorRef ref = read_npy(dir / (name == "f32_unaligned" ? "f32.npy" : name));
    ASSERT_TRUE(ref.ok()) << ref.error;
    if (name == "f32_unaligned") {  // as a GE dump may place a tensor: at an odd byte
      ref.offset += 2;
      ref.shape = {static_cast<int64_t>(values.size() - 1)};
    }
    std::string error;
    auto reading = TensorStream::open(ref, &error);
    auto viewing = TensorStream::open(ref, &error);
    ASSERT_TRUE(reading && viewing) << error;
    std::vector<float> read(ref.elements()), viewed;
    ASSERT_EQ(reading->read(read.data(), read.size(), &error), static_cast<int64_t>(read.size())) << error;
    ASSERT_TRUE(viewing->seek(0, &error));
    const bool whole = guard_mapped_reads([&] {
      for (;;) {
        StoredValues values{};
        uint64_t count = 0;
        ASSERT_TRUE(viewing->view(100000, &values, &count, &error)) << error;
        if (count == 0) break;
        ASSERT_EQ(values.dtype, stored) << name;
        viewed.resize(viewed.size() + count);
        decode_to_float(values.dtype, static_cast<const uint8_t*>(values.data), count, false,
                        viewed.data() + viewed.size() - count);
      }
    });
    EXPECT_TRUE(whole);
    ASSERT_EQ(viewed.size(), read.size()) << name;
    EXPECT_EQ(std::memcmp(viewed.data(), read.data(), read.size() * 4), 0) << name;
  }
}

TEST(MappedFile, ATensorTruncatedAfterItWasOpenedFailsInsideTheGuard) {
  TempDir dir;
  diagnose::testing::write_npy_f32(dir / "t.npy", ramp(1 << 20));
  const TensorRef ref = read_npy(dir / "t.npy");
  std::string error;
  auto stream = TensorStream::open(ref, &error);
  ASSERT_TRUE(stream) << error;
  ::truncate((dir / "t.npy").c_str(), 4096);
  double sum = 0;
  const bool whole = guard_mapped_reads([&] {
    StoredValues values{};
    uint64_t count = 0;
    if (!stream->view(1 << 20, &values, &count, &error)) return;
    for (uint64_t i = 0; i < count; ++i) sum += static_cast<const float*>(values.data)[i];
  });
  EXPECT_FALSE(whole);
}

}  // namespace
}  // namespace diagnose::compare
