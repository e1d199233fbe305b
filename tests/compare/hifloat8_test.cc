#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "compare/dtype.h"

namespace diagnose::compare {
namespace {

// Values worked out by hand from the bit layout in the HiF8 paper.
TEST(HiFloat8, HandDerivedCodes) {
  const std::map<uint8_t, float> expected = {
      {0x00, 0.0f},                   // zero
      {0x01, std::ldexp(1.0f, -22)},  // 0 0000 001: smallest denormal
      {0x07, std::ldexp(1.0f, -16)},  // 0 0000 111: largest denormal
      {0x08, 1.0f},                   // 0 0001 000: dot 0, E = 0
      {0x0F, 1.875f},                 // 0 0001 111
      {0x10, 2.0f},                   // 0 001 0 000: dot 1, E = +1
      {0x18, 0.5f},                   // 0 001 1 000: E = -1
      {0x1F, 0.9375f},                // 0 001 1 111: 0.5 * 1.875
      {0x20, 4.0f},                   // 0 01 00 000: dot 2, E = +2
      {0x28, 8.0f},                   // 0 01 01 000: E = +3
      {0x2F, 15.0f},                  // 8 * 1.875
      {0x30, 0.25f},                  // 0 01 10 000: E = -2
      {0x38, 0.125f},                 // 0 01 11 000: E = -3
      {0x40, 16.0f},                  // 0 10 000 00: dot 3, E = +4
      {0x4C, 128.0f},                 // 0 10 011 00: E = +7
      {0x4F, 224.0f},                 // 128 * 1.75
      {0x5C, std::ldexp(1.0f, -7)},   // 0 10 111 00: E = -7
      {0x60, 256.0f},                 // 0 11 0000 0: dot 4, E = +8
      {0x61, 384.0f},                 // 256 * 1.5
      {0x6E, 32768.0f},               // 0 11 0111 0: E = +15, the largest finite
      {0x70, std::ldexp(1.0f, -8)},   // 0 11 1000 0: E = -8
      {0x7E, std::ldexp(1.0f, -15)},  // 0 11 1111 0: E = -15
      {0x7F, std::ldexp(1.5f, -15)},
      {0x88, -1.0f},
      {0xC0, -16.0f},
      {0x81, -std::ldexp(1.0f, -22)},
      {0xEE, -32768.0f},
  };
  for (const auto& [code, value] : expected) {
    EXPECT_EQ(hifloat8_to_float(code), value) << "code 0x" << std::hex << int(code);
  }
}

TEST(HiFloat8, SpecialValues) {
  EXPECT_TRUE(std::isnan(hifloat8_to_float(0x80)));
  EXPECT_EQ(hifloat8_to_float(0x6F), INFINITY);
  EXPECT_EQ(hifloat8_to_float(0xEF), -INFINITY);
  int nan_count = 0, inf_count = 0;
  for (int code = 0; code < 256; ++code) {
    const float v = hifloat8_to_float(static_cast<uint8_t>(code));
    nan_count += std::isnan(v);
    inf_count += std::isinf(v);
  }
  EXPECT_EQ(nan_count, 1);
  EXPECT_EQ(inf_count, 2);
}

TEST(HiFloat8, SignIsSymmetric) {
  for (int code = 1; code < 128; ++code) {
    EXPECT_EQ(hifloat8_to_float(static_cast<uint8_t>(code | 0x80)), -hifloat8_to_float(static_cast<uint8_t>(code)))
        << code;
  }
}

// The positive codes decode to distinct values whose binade populations follow the
// tapered layout, and sorted neighbours never jump by more than a factor of two.
TEST(HiFloat8, PositiveCodesAreDistinctAndTapered) {
  std::vector<float> values;
  std::map<int, int> per_binade;
  for (int code = 1; code < 128; ++code) {
    const float v = hifloat8_to_float(static_cast<uint8_t>(code));
    if (std::isinf(v)) continue;
    ASSERT_GT(v, 0.0f) << code;
    values.push_back(v);
    per_binade[std::ilogb(v)]++;
  }
  ASSERT_EQ(values.size(), 126u);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(std::adjacent_find(values.begin(), values.end()), values.end());
  for (size_t i = 1; i < values.size(); ++i) EXPECT_LE(values[i] / values[i - 1], 2.0f);
  EXPECT_EQ(values.front(), std::ldexp(1.0f, -22));
  EXPECT_EQ(values.back(), 32768.0f);

  for (int e = -22; e <= -16; ++e) EXPECT_EQ(per_binade[e], 1) << e;
  EXPECT_EQ(per_binade[0], 8);
  for (int e : {-1, 1, -2, 2, -3, 3}) EXPECT_EQ(per_binade[e], 8) << e;
  for (int e = 4; e <= 7; ++e) EXPECT_EQ(per_binade[e] + per_binade[-e], 8) << e;
  for (int e = 8; e <= 14; ++e) EXPECT_EQ(per_binade[e] + per_binade[-e], 4) << e;
  EXPECT_EQ(per_binade[-15], 2);
  EXPECT_EQ(per_binade[15], 1);  // the other code of that binade is infinity
}

// Within one dot width, a larger mantissa gives a larger magnitude.
TEST(HiFloat8, MonotoneInMantissa) {
  for (int code = 0x08; code < 0x6F; ++code) {
    const int mantissa_bits = code >= 0x60 ? 1 : code >= 0x40 ? 2 : 3;
    const int mask = (1 << mantissa_bits) - 1;
    if ((code & mask) == mask) continue;
    EXPECT_LT(hifloat8_to_float(static_cast<uint8_t>(code)), hifloat8_to_float(static_cast<uint8_t>(code + 1))) << code;
  }
}

}  // namespace
}  // namespace diagnose::compare
