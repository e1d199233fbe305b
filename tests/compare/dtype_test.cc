#include "compare/dtype.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

namespace diagnose::compare {
namespace {

TEST(DType, HalfDecodesNormalsSubnormalsAndSpecials) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

TEST(DType, VectorHalfDecodeMatchesScalarForAllCodes) {
  std::vector<uint16_t> codes(65536);
  for (int i = 0; i < 65536; ++i) codes[i] = static_cast<uint16_t>(i);
  std::vector<float> out(codes.size());
  decode_to_float(DType::Float16, reinterpret_cast<const uint8_t*>(codes.data()), codes.size(), false, out.data());
  for (int i = 0; i < 65536; ++i) {
    const float want = half_to_float(codes[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out[i])) << i;
    } else {
      uint32_t a, b;
      std::memcpy(&a, &want, 4);
      std::memcpy(&b, &out[i], 4);
      ASSERT_EQ(a, b) << "code " << i;
    }
  }
}

TEST(DType, Bf16IsTheHighHalfOfFloat32) {
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
}

TEST(DType, Fp8E4M3FN) {
  EXPECT_EQ(fp8_e4m3fn_to_float(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3fn_to_float(0x7E), 448.0f);  // largest finite
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0x7F)));
  EXPECT_EQ(fp8_e4m3fn_to_float(0x78), 256.0f);  // no infinity in this format
  EXPECT_EQ(fp8_e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3fn_to_float(0xB8), -1.0f);
}

TEST(DType, Fp8E5M2IsTheHighByteOfHalf) {
  for (int v = 0; v < 256; ++v) {
    const float a = fp8_e5m2_to_float(static_cast<uint8_t>(v));
    const float b = half_to_float(static_cast<uint16_t>(v << 8));
    if (std::isnan(b))
      EXPECT_TRUE(std::isnan(a)) << v;
    else
      EXPECT_EQ(a, b) << v;
  }
}

TEST(DType, SubByteTypes) {
  const uint8_t int4[] = {0x7F, 0x08};  // low nibble first: 15->-1, 7, -8, 0
  float out[4];
  decode_to_float(DType::Int4, int4, 4, false, out);
  EXPECT_EQ(out[0], -1);
  EXPECT_EQ(out[1], 7);
  EXPECT_EQ(out[2], -8);
  EXPECT_EQ(out[3], 0);
  const uint8_t bits[] = {0b10100101};
  float b[8];
  decode_to_float(DType::UInt1, bits, 8, false, b);
  const float want[] = {1, 0, 1, 0, 0, 1, 0, 1};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[i], want[i]) << i;
  EXPECT_EQ(bytes_for_elements(DType::Int4, 3), 2u);
  EXPECT_EQ(bytes_for_elements(DType::UInt1, 9), 2u);
}

TEST(DType, BigEndianIntegersAndDoubles) {
  const uint8_t be_i32[] = {0xFF, 0xFF, 0xFF, 0xFE};
  float out;
  decode_to_float(DType::Int32, be_i32, 1, true, &out);
  EXPECT_EQ(out, -2);
  double d = 0.1, back;
  uint8_t swapped[8];
  std::memcpy(swapped, &d, 8);
  std::reverse(swapped, swapped + 8);
  decode_to_double(DType::Float64, swapped, 1, true, &back);
  EXPECT_EQ(back, 0.1);
}

TEST(DType, ComplexDecodesAsPairs) {
  const float c[] = {1.5f, -2.0f};
  float out[2];
  decode_to_float(DType::Complex64, reinterpret_cast<const uint8_t*>(c), 1, false, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(scalars_per_element(DType::Complex64), 2);
}

TEST(DType, GeNumberingAndUnsupportedTypesGiveAReason) {
  std::string why;
  EXPECT_EQ(dtype_from_ge(1, &why), DType::Float32);
  EXPECT_EQ(dtype_from_ge(27, &why), DType::BFloat16);
  EXPECT_EQ(dtype_from_ge(35, &why), DType::Float8E4M3FN);
  EXPECT_EQ(dtype_from_ge(13, &why), DType::Unknown);
  EXPECT_EQ(why, "unsupported dtype DT_STRING");
  EXPECT_EQ(dtype_from_ge(999, &why), DType::Unknown);
  EXPECT_EQ(why, "unsupported dtype code 999");
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Int64, DType::Bool, DType::Float8E5M2,
                  DType::Complex64})
    EXPECT_EQ(dtype_from_name(torch_name(t)), t) << torch_name(t);
  EXPECT_EQ(dtype_from_name("bf16"), DType::BFloat16);
  EXPECT_EQ(dtype_from_numpy('f', 2), DType::Float16);
  EXPECT_EQ(dtype_from_numpy('O', 8), DType::Unknown);
}

TEST(DType, UlpSpacing) {
  EXPECT_EQ(ulp_at(DType::Float32, 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_at(DType::Float16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_at(DType::Float16, 0.0), std::ldexp(1.0, -24));
  EXPECT_EQ(ulp_at(DType::BFloat16, 3.0), std::ldexp(1.0, -6));
  EXPECT_EQ(ulp_at(DType::Float8E4M3FN, 1.0), 0.125);
  EXPECT_EQ(ulp_at(DType::Int32, 123.0), 1.0);
}

}  // namespace
}  // namespace diagnose::compare
