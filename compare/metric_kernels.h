// The inner loops of PairAccumulator: sums over one block of at most kBlock elements.
//
// Two implementations with one contract: a portable one (plain loops the compiler
// vectorizes for any x86-64 or other CPU) and one written with AVX2+FMA+F16C intrinsics for
// CPUs that have them (metric_kernels_avx2.cc). metric_kernels() picks one at run time.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "compare/dtype.h"
#include "compare/metrics.h"

namespace diagnose::compare {

constexpr size_t kBlock = 2048;
constexpr double kEps = 1.1920928955078125e-07;  // 2^-23, msit's eps (float32 machine epsilon)

struct UlpRule {
  bool by_exponent;  // fast path: spacing from the exponent of the golden value
  double step;       // 2^-mantissa_bits
  double smallest;   // spacing of the subnormal range, 2^(min_exponent - mantissa_bits)
};

// A block's values as float32, for the kernels after sum(): pointers into the stored values,
// or into the storage where sum() widened 16-bit ones.
struct WideBlock {
  const float* golden = nullptr;
  const float* mine = nullptr;
  float golden_storage[kBlock];
  float mine_storage[kBlock];
};

struct KlSums {
  double sg = 0, ta = 0, tb = 0;
};

struct Kernels {
  // Everything but KL, over up to kBlock elements; leaves the block's float32 values in `wide`.
  // Counts NaN/Inf only when the block holds some.
  void (*sum)(StoredValues g, StoredValues m, size_t len, double atol, double rtol, UlpRule rule, WideBlock& wide,
              BlockSums& out);
  // KL's sums for a block where every |m - g| < 1, relative to the block's golden maximum
  // (`block` is this block's sum() result): sg = sum w, ta = sum w d, tb = sum w (e^d - 1 - d)
  // with w = exp(g - g_max), d = m - g.
  KlSums (*kl_close)(const float* g, const float* m, size_t len, const BlockSums& block);
  // For any other block, in double precision: sg and ta as above, and sm = sum exp(m - m_max).
  void (*kl_far)(const float* g, const float* m, size_t len, double g_max, double m_max, double& sg, double& ta,
                 double& sm);
};

const Kernels& portable_kernels();
// nullptr when this CPU lacks AVX2, FMA or F16C.
const Kernels* avx2_kernels();
// The AVX2 kernels where the CPU has them, unless DIAGNOSE_PORTABLE_KERNELS=1 is set
// (for tests of the portable ones, and for comparing the two).
const Kernels& metric_kernels();

// Shared by both implementations.
// The value at `index` onwards as float32: `count` of them into `out`.
void widen(StoredValues values, size_t index, size_t count, float* out);
// StoredValues `count` elements further on.
StoredValues advance(StoredValues values, size_t count);
// sum() on float32 values (the portable kernel's; the AVX2 one's for a block's last len % 8).
void sum_float_block(const float* g, const float* m, size_t len, double atol, double rtol, UlpRule rule,
                     BlockSums& out);
// NaN/Inf counts and the allclose correction for a block that has non-finite values.
void count_special_values(const float* g, const float* m, size_t len, double atol, double rtol, BlockSums& out);
// The relative and absolute errors in double, for a block where float overflowed.
void double_errors_block(const float* g, const float* m, size_t len, BlockSums& out);
// Adds the sums of `tail` (later elements) to `into`.
void merge_block_sums(BlockSums& into, const BlockSums& tail);

// 1/k!, for the Taylor series of exp in both implementations.
constexpr double kInverseFactorial[] = {1.0,
                                        1.0,
                                        1.0 / 2,
                                        1.0 / 6,
                                        1.0 / 24,
                                        1.0 / 120,
                                        1.0 / 720,
                                        1.0 / 5040,
                                        1.0 / 40320,
                                        1.0 / 362880,
                                        1.0 / 3628800,
                                        1.0 / 39916800,
                                        1.0 / 479001600,
                                        1.0 / 6227020800,
                                        1.0 / 87178291200};

// How exp(x), x <= 0, is computed in each precision: 2^k e^r with |r| <= ln 2 / 2, e^r from its
// Taylor series to r^degree, ln 2 in two parts (Cody-Waite). Inputs below `lowest` give
// exp(lowest): a term that small next to the softmax's largest (exp(0) = 1) does not count,
// even times the largest |m - g| its kernel sees (1 for float, 7e38 for double).
template <typename Real>
struct ExpForm;
template <>
struct ExpForm<double> {  // ~1e-15 relative, down to -708
  using Bits = uint64_t;
  static constexpr double kShifter = 0x1.8p52, kLowest = -708, kLn2High = 0.6931471803691238,
                          kLn2Low = 1.9082149292705877e-10;
  static constexpr int kDegree = 12, kMantissaBits = 52, kBias = 1023;
};
template <>
struct ExpForm<float> {  // a few ulp, down to -87
  using Bits = uint32_t;
  static constexpr float kShifter = 0x1.8p23f, kLowest = -87, kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
  static constexpr int kDegree = 7, kMantissaBits = 23, kBias = 127;
};

// e^d - 1 - d without cancellation: d^2 (1/2! + d/3! + ... + d^(terms-1)/(terms+1)!). The
// terms needed for |d| < bound, with the truncation at most 2 bound^terms / (terms + 2)!
// relative, small enough that KL stays within 1e-11 of float64 even when it is 0 and
// the sum of these terms is not (mine = golden + a constant):
// |d| < 1/32: 5 terms (3e-9 relative, the terms below 5e-4); |d| < 1/4: 8 terms (3e-10,
// below 0.034); |d| < 1: 13 terms (2e-12, below 0.72).
template <int kTerms>
constexpr double exp_minus_linear(double d) {
  static_assert(kTerms >= 1 && kTerms <= 13);
  double p = kInverseFactorial[kTerms + 1];
  for (int k = kTerms; k >= 2; --k) p = p * d + kInverseFactorial[k];
  return d * d * p;
}

}  // namespace diagnose::compare
