// HiFloat8 (Ascend HiF8, arXiv 2409.16626) decoding.
//
// Bit 7 is the sign. A prefix-coded "dot" field follows and says how many bits
// the exponent takes:
//   11   -> 4 exponent bits, 1 mantissa bit     (|E| in 8..15)
//   10   -> 3 exponent bits, 2 mantissa bits    (|E| in 4..7)
//   01   -> 2 exponent bits, 3 mantissa bits    (|E| in 2..3)
//   001  -> 1 exponent bit,  3 mantissa bits    (|E| = 1)
//   0001 -> no exponent (E = 0), 3 mantissa bits
//   0000 -> denormal: the 3 remaining bits m give 2^(m-23); m = 0 is zero (+) or NaN (-)
// The exponent is sign-magnitude: its first bit is the exponent sign (1 = negative),
// the magnitude has an implicit leading 1 that is not stored.
// 0x6F / 0xEF (the largest exponent with mantissa 1) are +/-infinity.
#include <cmath>
#include <limits>

#include "compare/dtype.h"

namespace diagnose::compare {

float hifloat8_to_float(uint8_t v) {
  const bool negative = (v & 0x80) != 0;
  const uint8_t magnitude_bits = v & 0x7F;
  if (magnitude_bits == 0x6F) {
    return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }

  int exponent_bits = 0;  // stored exponent bits, sign included
  int mantissa_bits = 3;
  if ((magnitude_bits & 0x60) == 0x60) {
    exponent_bits = 4, mantissa_bits = 1;
  } else if ((magnitude_bits & 0x60) == 0x40) {
    exponent_bits = 3, mantissa_bits = 2;
  } else if ((magnitude_bits & 0x60) == 0x20) {
    exponent_bits = 2, mantissa_bits = 3;
  } else if (magnitude_bits & 0x10) {
    exponent_bits = 1, mantissa_bits = 3;
  } else if (magnitude_bits & 0x08) {
    exponent_bits = 0, mantissa_bits = 3;
  } else {
    const int m = magnitude_bits & 0x07;
    if (m == 0) return negative ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    const float value = std::ldexp(1.0f, m - 23);
    return negative ? -value : value;
  }

  const int mantissa = magnitude_bits & ((1 << mantissa_bits) - 1);
  int exponent = 0;
  if (exponent_bits > 0) {
    const int field = (magnitude_bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
    const bool exponent_negative = (field >> (exponent_bits - 1)) & 1;
    const int stored_magnitude = field & ((1 << (exponent_bits - 1)) - 1);
    const int exponent_magnitude = (1 << (exponent_bits - 1)) | stored_magnitude;
    exponent = exponent_negative ? -exponent_magnitude : exponent_magnitude;
  }
  const float significand = 1.0f + static_cast<float>(mantissa) / static_cast<float>(1 << mantissa_bits);
  const float value = std::ldexp(significand, exponent);
  return negative ? -value : value;
}

}  // namespace diagnose::compare
