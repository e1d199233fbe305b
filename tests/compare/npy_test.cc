#include "compare/npy.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "tests/compare/test_files.h"

namespace diagnose::compare {
namespace {

using testing::npy_bytes;
using testing::TempDir;
using testing::write_bytes;

TEST(Npy, ReadsV1HeaderAndData) {
  TempDir dir;
  const float v[] = {1, 2, 3, 4, 5, 6};
  write_bytes(dir / "a.npy", npy_bytes("<f4", "(2, 3)", v, sizeof v));
  TensorRef ref = read_npy(dir / "a.npy");
  ASSERT_TRUE(ref.ok()) << ref.error;
  EXPECT_EQ(ref.dtype, DType::Float32);
  EXPECT_EQ(ref.shape, (Shape{2, 3}));
  EXPECT_EQ(ref.offset % 64, 0u);
  std::string error;
  auto values = read_all_float(ref, &error);
  ASSERT_TRUE(values) << error;
  EXPECT_EQ((*values)[5], 6.0f);
}

TEST(Npy, V2AndV3HeadersScalarsAndEmpty) {
  TempDir dir;
  std::string v1 = npy_bytes("<i8", "()", "\x05\0\0\0\0\0\0\0", 8);
  std::string v2 = v1;
  v2[6] = 2;
  // v2 stores a 4-byte header length.
  const std::string header = v1.substr(10);
  std::string data = header.substr(header.size() - 8);
  std::string head = header.substr(0, header.size() - 8);
  v2 = std::string("\x93NUMPY\x02\x00", 8) + std::string(1, static_cast<char>(head.size() & 0xFF)) +
       std::string(1, static_cast<char>(head.size() >> 8)) + std::string(2, '\0') + head + data;
  write_bytes(dir / "v2.npy", v2);
  TensorRef ref = read_npy(dir / "v2.npy");
  ASSERT_TRUE(ref.ok()) << ref.error;
  EXPECT_TRUE(ref.shape.empty());
  EXPECT_EQ(ref.elements(), 1u);
  std::string v3 = v2;
  v3[6] = 3;
  write_bytes(dir / "v3.npy", v3);
  EXPECT_TRUE(read_npy(dir / "v3.npy").ok());
  write_bytes(dir / "empty.npy", npy_bytes("<f2", "(0, 4)", "", 0));
  TensorRef empty = read_npy(dir / "empty.npy");
  ASSERT_TRUE(empty.ok()) << empty.error;
  EXPECT_EQ(empty.elements(), 0u);
}

TEST(Npy, BigEndianAndFortranOrder) {
  TempDir dir;
  const uint8_t be[] = {0x3F, 0x80, 0, 0, 0x40, 0, 0, 0};  // 1.0f, 2.0f big-endian
  write_bytes(dir / "be.npy", npy_bytes(">f4", "(2,)", be, sizeof be));
  std::string error;
  auto v = read_all_float(read_npy(dir / "be.npy"), &error);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ((*v)[0], 1.0f);
  EXPECT_EQ((*v)[1], 2.0f);
  // Column-major [[1, 2, 3], [4, 5, 6]] is stored 1 4 2 5 3 6.
  const float f[] = {1, 4, 2, 5, 3, 6};
  write_bytes(dir / "f.npy", npy_bytes("<f4", "(2, 3)", f, sizeof f, true));
  auto c = read_all_float(read_npy(dir / "f.npy"), &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(*c, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(Npy, RejectsWithClearReasons) {
  TempDir dir;
  const auto reason = [&](const std::string& name, const std::string& bytes) {
    write_bytes(dir / name, bytes);
    TensorRef ref = read_npy(dir / name);
    EXPECT_FALSE(ref.ok()) << name;
    return ref.error;
  };
  EXPECT_NE(reason("obj.npy", npy_bytes("|O", "(2,)", "\x80\x04", 2)).find("object array"), std::string::npos);
  EXPECT_NE(reason("str.npy", npy_bytes("<U3", "(1,)", "abcdefghijkl", 12)).find("string"), std::string::npos);
  EXPECT_NE(reason("trunc.npy", npy_bytes("<f4", "(100,)", "1234", 4)).find("truncated"), std::string::npos);
  EXPECT_NE(reason("magic.npy", "hello world, not numpy").find("magic"), std::string::npos);
  std::string corrupt = npy_bytes("<f4", "(1,)", "1234", 4);
  corrupt[12] = '#';
  EXPECT_NE(reason("corrupt.npy", corrupt).find("corrupt npy header"), std::string::npos);
  std::string long_header = npy_bytes("<f4", "(1,)", "1234", 4);
  long_header[8] = '\xFF';
  long_header[9] = '\xFF';
  EXPECT_NE(reason("long.npy", long_header).find("past the end"), std::string::npos);
  EXPECT_NE(reason("structured.npy", npy_bytes("[('a', '<f4')]", "(1,)", "1234", 4)), "");
  ::mkdir((dir / "dir.npy").c_str(), 0755);
  EXPECT_FALSE(read_npy(dir / "dir.npy").ok());
  EXPECT_FALSE(read_npy(dir / "missing.npy").ok());
}

}  // namespace
}  // namespace diagnose::compare
