#include "compare/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace diagnose::compare {

namespace {

constexpr double kEps = 1.1920928955078125e-07;  // 2^-23, msit's eps (float32 machine epsilon)
constexpr size_t kBlock = 2048;

constexpr double kInverseFactorial[] = {1.0,           1.0,           1.0 / 2,         1.0 / 6,
                                        1.0 / 24,      1.0 / 120,     1.0 / 720,       1.0 / 5040,
                                        1.0 / 40320,   1.0 / 362880,  1.0 / 3628800,   1.0 / 39916800,
                                        1.0 / 479001600, 1.0 / 6227020800, 1.0 / 87178291200};  // 1/k!

// How exp_nonpositive works in each precision: 2^k e^r with |r| <= ln 2 / 2, e^r from its
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

// exp(x) for x <= 0, written with only the operations AVX2 has for 32- and 64-bit lanes, so
// loops over it vectorize (eight float lanes or four double lanes at once). exp(0) is exactly 1.
template <typename Real>
inline Real exp_nonpositive(Real x) {
  using Form = ExpForm<Real>;
  x = x < Form::kLowest ? Form::kLowest : x;
  // Adding the shifter rounds x / ln 2 to an integer k held in the low bits of the sum.
  const Real shifted = x * static_cast<Real>(1.4426950408889634) + Form::kShifter;
  typename Form::Bits k_bits;
  std::memcpy(&k_bits, &shifted, sizeof k_bits);
  const Real k = shifted - Form::kShifter;
  const Real r = (x - k * Form::kLn2High) - k * Form::kLn2Low;
  Real p = static_cast<Real>(kInverseFactorial[Form::kDegree]);
  for (int i = Form::kDegree - 1; i >= 0; --i) p = p * r + static_cast<Real>(kInverseFactorial[i]);
  // The low bits of k_bits are k modulo a power of two; shifted into the exponent field with
  // the bias they make 2^k for every k down to 1 - bias.
  const typename Form::Bits scale_bits = (k_bits + Form::kBias) << Form::kMantissaBits;
  Real scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return p * scale;
}

// e^d - 1 - d without cancellation: d^2 (1/2! + d/3! + ... + d^(terms-1)/(terms+1)!). The
// terms needed for |d| < bound, with the truncation at most 2 bound^terms / (terms + 2)!
// relative, small enough that KL stays within 1e-11 of float64 even when it is 0 and
// the sum of these terms is not (mine = golden + a constant):
// |d| < 1/32: 5 terms (3e-9 relative, the terms below 5e-4); |d| < 1/4: 8 terms (3e-10,
// below 0.034); |d| < 1: 13 terms (2e-12, below 0.72).
template <int kTerms>
inline double exp_minus_linear(double d) {
  static_assert(kTerms >= 1 && kTerms <= 13);
  double p = kInverseFactorial[kTerms + 1];
  for (int k = kTerms; k >= 2; --k) p = p * d + kInverseFactorial[k];
  return d * d * p;
}

struct UlpRule {
  bool by_exponent;  // fast path: spacing from the exponent of the golden value
  double step;       // 2^-mantissa_bits
  double smallest;   // spacing of the subnormal range, 2^(min_exponent - mantissa_bits)
};

UlpRule ulp_rule(DType t) {
  switch (t) {
    case DType::Float16: return {true, 0x1p-10, 0x1p-24};
    case DType::BFloat16: return {true, 0x1p-7, 0x1p-133};
    case DType::Float32:
    case DType::Complex64: return {true, 0x1p-23, 0x1p-149};
    default: return {false, 0, 0};
  }
}

// 1 / max(2^floor(log2|g|) * step, smallest) for finite g, from the exponent bits alone:
// a biased exponent E becomes 2046 - E, the exponent of 2^-floor(log2|g|). Every factor is a
// power of two, so multiplying by it is exactly the division by the ULP, without a divider
// (the slowest unit of the loop). g == 0 gives 2^1023 / step = inf, capped by 1 / smallest.
inline double inverse_ulp_by_exponent(double g, double inverse_step, double inverse_smallest) {
  uint64_t bits;
  std::memcpy(&bits, &g, 8);
  bits = ((2046 - (bits >> 52 & 0x7FF)) & 0x7FF) << 52;
  double inverse_power;
  std::memcpy(&inverse_power, &bits, 8);
  const double inverse = inverse_power * inverse_step;
  return inverse < inverse_smallest ? inverse : inverse_smallest;
}

// Sums of exp(v_i - M) terms kept with an online maximum M: when a block raises it,
// every sum relative to the old maximum is rescaled to the new one.
template <typename... Sums>
inline void rescale(double& running_max, double block_max, Sums&... sums) {
  if (block_max > running_max) {
    if (std::isfinite(running_max)) {
      const double f = std::exp(running_max - block_max);
      ((sums *= f), ...);
    }
    running_max = block_max;
  }
}

// Sums over one block of elements. The kernels are inlined into an AVX2+FMA entry
// point and a baseline one, picked at run time, so one binary runs everywhere and
// uses the wide units where present. (GCC 12 does not vectorize these loops under
// target_clones, hence the explicit pair.)
struct BlockSums {
  uint64_t g_nan = 0, g_inf = 0, m_nan = 0, m_inf = 0, special_bad = 0, allclose_bad = 0;
  double g_max = -INFINITY, g_min = INFINITY, m_max = -INFINITY, m_min = INFINITY;
  double g_sum = 0, m_sum = 0, gg = 0, mm = 0, gm = 0, dd = 0;
  double max_rel = 0, sum_rel = 0, max_abs = 0, sum_abs = 0, max_ulp = 0, sum_ulp = 0;
  double max_diff = 0;  // max |m - g| over all elements, for KL's choice of kernel
};

// The error terms in float, eight lanes at a time: max/min, and |m - g| / |g| (masked where
// |g| <= eps) to within 2^-23 relative, far inside the 1e-6 the metrics promise. Returns false
// when a value overflowed float (|m - g| or the relative error above 3.4e38), for the caller to
// measure the block again in double.
__attribute__((always_inline)) inline bool float_errors_block(const float* g, const float* m, size_t len,
                                                              BlockSums& out) {
  float g_max = -INFINITY, g_min = INFINITY, m_max = -INFINITY, m_min = INFINITY;
  float max_rel = 0, max_abs = 0, max_diff = 0;
  double sum_rel = 0, sum_abs = 0;
#pragma omp simd reduction(max : g_max, m_max, max_rel, max_abs, max_diff) reduction(min : g_min, m_min) \
    reduction(+ : sum_rel, sum_abs)
  for (size_t i = 0; i < len; ++i) {
    const float gv = g[i], mv = m[i];
    g_max = gv > g_max ? gv : g_max;
    g_min = gv < g_min ? gv : g_min;
    m_max = mv > m_max ? mv : m_max;
    m_min = mv < m_min ? mv : m_min;
    const float ag = std::fabs(gv), ad = std::fabs(mv - gv);
    const bool significant = ag > static_cast<float>(kEps);
    const float rel = significant ? ad / ag : 0.0f;
    const float abs_masked = significant ? ad : 0.0f;
    max_rel = rel > max_rel ? rel : max_rel;
    max_abs = abs_masked > max_abs ? abs_masked : max_abs;
    max_diff = ad > max_diff ? ad : max_diff;
    sum_rel += rel;
    sum_abs += abs_masked;
  }
  out.g_max = g_max; out.g_min = g_min; out.m_max = m_max; out.m_min = m_min;
  out.max_rel = max_rel; out.sum_rel = sum_rel; out.max_abs = max_abs; out.sum_abs = sum_abs; out.max_diff = max_diff;
  return max_rel < INFINITY && max_diff < INFINITY;
}

// The same in double, for blocks where float overflowed.
inline void double_errors_block(const float* g, const float* m, size_t len, BlockSums& out) {
  double max_rel = 0, sum_rel = 0, max_abs = 0, sum_abs = 0, max_diff = 0;
  for (size_t i = 0; i < len; ++i) {
    const double gv = g[i], mv = m[i];
    const double ag = std::fabs(gv), ad = std::fabs(mv - gv);
    const bool significant = ag > kEps;
    const double rel = significant ? std::fabs(mv / gv - 1.0) : 0.0;
    const double abs_masked = significant ? ad : 0.0;
    max_rel = std::max(max_rel, rel);
    max_abs = std::max(max_abs, abs_masked);
    max_diff = std::max(max_diff, ad);
    sum_rel += rel;
    sum_abs += abs_masked;
  }
  out.max_rel = max_rel; out.sum_rel = sum_rel; out.max_abs = max_abs; out.sum_abs = sum_abs; out.max_diff = max_diff;
}

// Several loops, so that each one's accumulators fit in the 16 vector registers (one loop
// spilled them to the stack every iteration): the sums in double, the errors in float, the
// ULP errors, and the special values (only for a block that has some: float inputs square to
// at most 1.2e77, so the sums of squares are finite exactly when every element is). Counts
// are kept as doubles inside the loops (exact below 2^53) so that every lane has the same
// width, which the vectorizer needs.
__attribute__((always_inline)) inline void sum_block(const float* g, const float* m, size_t len, double atol,
                                                     double rtol, UlpRule rule, BlockSums& out) {
  double g_sum = 0, m_sum = 0, gg = 0, mm = 0, gm = 0, dd = 0, allclose_bad = 0;
#pragma omp simd reduction(+ : g_sum, m_sum, gg, mm, gm, dd, allclose_bad)
  for (size_t i = 0; i < len; ++i) {
    const double gv = g[i], mv = m[i];
    g_sum += gv;
    m_sum += mv;
    gg += gv * gv;
    mm += mv * mv;
    gm += gv * mv;
    const double d = mv - gv;
    dd += d * d;
    allclose_bad += std::fabs(d) > atol + rtol * std::fabs(gv) ? 1.0 : 0.0;  // NaN compares false
  }
  const bool specials = !(std::isfinite(gg) && std::isfinite(mm));
  if (!float_errors_block(g, m, len, out) && !specials) double_errors_block(g, m, len, out);

  const double inverse_step = rule.by_exponent ? 1.0 / rule.step : 0.0;  // 0: ULP measured elsewhere
  const double inverse_smallest = rule.by_exponent ? 1.0 / rule.smallest : 0.0;
  double max_ulp = 0, sum_ulp = 0;
#pragma omp simd reduction(+ : sum_ulp) reduction(max : max_ulp)
  for (size_t i = 0; i < len; ++i) {
    const double gv = g[i], mv = m[i];
    const double ulp = std::fabs(mv - gv) * inverse_ulp_by_exponent(gv, inverse_step, inverse_smallest);
    max_ulp = ulp > max_ulp ? ulp : max_ulp;
    sum_ulp += ulp;
  }

  double g_nan = 0, g_inf = 0, m_nan = 0, m_inf = 0, special_bad = 0, allclose_non_finite = 0;
  if (specials) {
#pragma omp simd reduction(+ : g_nan, g_inf, m_nan, m_inf, special_bad, allclose_non_finite)
    for (size_t i = 0; i < len; ++i) {
      const double gv = g[i], mv = m[i];
      const double ag = std::fabs(gv), am = std::fabs(mv);
      g_nan += gv != gv ? 1.0 : 0.0;
      m_nan += mv != mv ? 1.0 : 0.0;
      g_inf += ag == INFINITY ? 1.0 : 0.0;
      m_inf += am == INFINITY ? 1.0 : 0.0;
      const bool both_finite = ag < INFINITY && am < INFINITY;  // false for NaN too
      special_bad += both_finite || gv == mv || (gv != gv && mv != mv) ? 0.0 : 1.0;
      // allclose looks at elements finite on both sides only
      allclose_non_finite += !both_finite && std::fabs(mv - gv) > atol + rtol * ag ? 1.0 : 0.0;
    }
  }
  const auto count = [](double c) { return static_cast<uint64_t>(c); };
  out.g_nan = count(g_nan); out.g_inf = count(g_inf); out.m_nan = count(m_nan); out.m_inf = count(m_inf);
  out.special_bad = count(special_bad);
  out.allclose_bad = count(allclose_bad - allclose_non_finite);
  out.g_sum = g_sum; out.m_sum = m_sum; out.gg = gg; out.mm = mm; out.gm = gm; out.dd = dd;
  out.max_ulp = max_ulp; out.sum_ulp = sum_ulp;
}

// KL's sums for a block where every |m - g| < 1 (the common case), relative to the block's
// golden maximum: with w = exp(g - g_max) and d = m - g, sg = sum w, ta = sum w d and
// tb = sum w (e^d - 1 - d). KL then comes out as log1p((ta + tb) / sg) - ta / sg, with no
// difference of two large logs, so the weights w may be float exps (KL's error stays near
// float precision relative to KL itself); d and the e^d terms stay in double, because tb
// may be much larger than KL (mine = golden + a constant has KL = 0).
template <int kTerms>
__attribute__((always_inline)) inline void kl_close_block(const float* g, const float* m, size_t len, float g_max,
                                                          double& sg_out, double& ta_out, double& tb_out) {
  double sg = 0, ta = 0, tb = 0;
#pragma omp simd reduction(+ : sg, ta, tb)
  for (size_t i = 0; i < len; ++i) {
    const double w = exp_nonpositive(g[i] - g_max);
    const double d = static_cast<double>(m[i]) - g[i];
    sg += w;
    ta += w * d;
    tb += w * exp_minus_linear<kTerms>(d);
  }
  sg_out = sg;
  ta_out = ta;
  tb_out = tb;
}

// The same sums in double precision for any other block, with mine's sum taken relative to
// its own maximum: sg = sum exp(g - g_max), ta = sum exp(g - g_max) (m - g), sm = sum exp(m - m_max).
__attribute__((always_inline)) inline void kl_far_block(const float* g, const float* m, size_t len, double g_max,
                                                        double m_max, double& sg_out, double& ta_out, double& sm_out) {
  double sg = 0, ta = 0, sm = 0;
#pragma omp simd reduction(+ : sg, ta, sm)
  for (size_t i = 0; i < len; ++i) {
    const double gv = g[i], mv = m[i];
    const double w = exp_nonpositive(gv - g_max);
    sg += w;
    ta += w * (mv - gv);
    sm += exp_nonpositive(mv - m_max);
  }
  sg_out = sg;
  ta_out = ta;
  sm_out = sm;
}

struct Kernels {
  void (*sum)(const float*, const float*, size_t, double, double, UlpRule, BlockSums&);
  // by the block's largest |m - g|: below 1/32, 1/4, 1
  void (*kl_close[3])(const float*, const float*, size_t, float, double&, double&, double&);
  void (*kl_far)(const float*, const float*, size_t, double, double, double&, double&, double&);
};

#define DIAGNOSE_KERNELS(suffix, attributes)                                                                 \
  attributes void sum_block_##suffix(const float* g, const float* m, size_t len, double atol, double rtol,    \
                                     UlpRule rule, BlockSums& out) {                                          \
    sum_block(g, m, len, atol, rtol, rule, out);                                                              \
  }                                                                                                           \
  template <int kTerms>                                                                                        \
  attributes void kl_close_block_##suffix(const float* g, const float* m, size_t len, float g_max, double& sg, \
                                          double& ta, double& tb) {                                           \
    kl_close_block<kTerms>(g, m, len, g_max, sg, ta, tb);                                                     \
  }                                                                                                           \
  attributes void kl_far_block_##suffix(const float* g, const float* m, size_t len, double g_max,             \
                                        double m_max, double& sg, double& ta, double& sm) {                   \
    kl_far_block(g, m, len, g_max, m_max, sg, ta, sm);                                                        \
  }
DIAGNOSE_KERNELS(avx2, __attribute__((target("avx2,fma"))))
DIAGNOSE_KERNELS(base, )
#undef DIAGNOSE_KERNELS

const Kernels& kernels() {
  static const Kernels k = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                               ? Kernels{sum_block_avx2,
                                         {kl_close_block_avx2<5>, kl_close_block_avx2<8>, kl_close_block_avx2<13>},
                                         kl_far_block_avx2}
                               : Kernels{sum_block_base,
                                         {kl_close_block_base<5>, kl_close_block_base<8>, kl_close_block_base<13>},
                                         kl_far_block_base};
  return k;
}

}  // namespace

PairAccumulator::PairAccumulator(DType target_dtype, AllcloseTolerance tol)
    : target_(target_dtype), tol_(tol) {}

void PairAccumulator::add(const float* golden, const float* mine, size_t n) {
  const UlpRule rule = ulp_rule(target_);
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    const float* g = golden + start;
    const float* m = mine + start;
    BlockSums b;
    kernels().sum(g, m, len, tol_.atol, tol_.rtol, rule, b);
    if (!rule.by_exponent) {
      for (size_t i = 0; i < len; ++i) {
        const double ulp = std::fabs(static_cast<double>(m[i]) - g[i]) / ulp_at(target_, g[i]);
        b.max_ulp = std::max(b.max_ulp, ulp);
        b.sum_ulp += ulp;
      }
    }
    // The block becomes an accumulator of its own and merges in: one place folds
    // sums, and the merge rescales the softmax sums to the running maxima.
    PairAccumulator block(target_, tol_);
    block.n_ = len;
    block.g_nan_ = b.g_nan; block.g_inf_ = b.g_inf; block.m_nan_ = b.m_nan; block.m_inf_ = b.m_inf;
    block.special_bad_ = b.special_bad;
    block.allclose_bad_ = b.allclose_bad;
    block.g_max_ = b.g_max; block.g_min_ = b.g_min; block.m_max_ = b.m_max; block.m_min_ = b.m_min;
    block.g_sum_ = b.g_sum; block.m_sum_ = b.m_sum;
    block.gg_ = b.gg; block.mm_ = b.mm; block.gm_ = b.gm; block.dd_ = b.dd;
    block.max_rel_ = b.max_rel; block.sum_rel_ = b.sum_rel; block.max_abs_ = b.max_abs; block.sum_abs_ = b.sum_abs;
    block.max_ulp_ = b.max_ulp; block.sum_ulp_ = b.sum_ulp;
    block.kl_mg_ = b.g_max;
    if (b.max_diff < 1.0) {
      const int tier = b.max_diff < 1.0 / 32 ? 0 : b.max_diff < 0.25 ? 1 : 2;
      kernels().kl_close[tier](g, m, len, static_cast<float>(b.g_max), block.kl_sg_, block.kl_ta_, block.kl_tb_);
    } else {
      block.kl_mm_ = b.m_max;
      kernels().kl_far(g, m, len, b.g_max, b.m_max, block.kl_far_sg_, block.kl_far_ta_, block.kl_sm_);
    }
    merge(block);
  }
}

void PairAccumulator::merge(const PairAccumulator& o) {
  n_ += o.n_;
  g_nan_ += o.g_nan_; g_inf_ += o.g_inf_; m_nan_ += o.m_nan_; m_inf_ += o.m_inf_;
  special_bad_ += o.special_bad_;
  allclose_bad_ += o.allclose_bad_;
  g_max_ = std::max(g_max_, o.g_max_); g_min_ = std::min(g_min_, o.g_min_);
  m_max_ = std::max(m_max_, o.m_max_); m_min_ = std::min(m_min_, o.m_min_);
  g_sum_ += o.g_sum_; m_sum_ += o.m_sum_;
  gg_ += o.gg_; mm_ += o.mm_; gm_ += o.gm_; dd_ += o.dd_;
  max_rel_ = std::max(max_rel_, o.max_rel_); sum_rel_ += o.sum_rel_;
  max_abs_ = std::max(max_abs_, o.max_abs_); sum_abs_ += o.sum_abs_;
  max_ulp_ = std::max(max_ulp_, o.max_ulp_); sum_ulp_ += o.sum_ulp_;

  PairAccumulator other = o;  // its KL sums, rescaled to the common maxima below
  rescale(kl_mg_, other.kl_mg_, kl_sg_, kl_ta_, kl_tb_, kl_far_sg_, kl_far_ta_);
  rescale(other.kl_mg_, kl_mg_, other.kl_sg_, other.kl_ta_, other.kl_tb_, other.kl_far_sg_, other.kl_far_ta_);
  kl_sg_ += other.kl_sg_; kl_ta_ += other.kl_ta_; kl_tb_ += other.kl_tb_;
  kl_far_sg_ += other.kl_far_sg_; kl_far_ta_ += other.kl_far_ta_;
  rescale(kl_mm_, other.kl_mm_, kl_sm_);
  rescale(other.kl_mm_, kl_mm_, other.kl_sm_);
  kl_sm_ += other.kl_sm_;
}

double PairAccumulator::kl_divergence() const {
  // KL = log E_p[e^d] - E_p[d] with p = softmax(g), d = m - g (softmax(m) = p e^d / E_p[e^d]).
  const double sg = kl_sg_ + kl_far_sg_;
  const double mean_d = (kl_ta_ + kl_far_ta_) / sg;
  if (kl_mm_ == -INFINITY) return std::log1p((kl_ta_ + kl_tb_) / sg) - mean_d;  // no far block
  const double far_gap = kl_mm_ - kl_mg_;
  if (far_gap <= 700) {
    // E_p[e^d] - 1, from the close blocks' small terms and the far blocks' double sums.
    const double excess = (kl_ta_ + kl_tb_ + kl_sm_ * std::exp(far_gap) - kl_far_sg_) / sg;
    if (excess > -0.5) return std::log1p(excess) - mean_d;
  }
  // E_p[e^d] far from 1, so nothing cancels: its log in log space, relative to the larger maximum.
  const double top = std::max(kl_mg_, kl_mm_);
  const double sum_m = (kl_sg_ + kl_ta_ + kl_tb_) * std::exp(kl_mg_ - top) + kl_sm_ * std::exp(kl_mm_ - top);
  return top - kl_mg_ + std::log(sum_m) - std::log(sg) - mean_d;
}

namespace {

// numpy semantics: max/min/mean are NaN when the side holds a NaN.
SideStats side_stats(uint64_t n, uint64_t nan, uint64_t inf, double max, double min, double sum) {
  SideStats s;
  s.nan_count = nan;
  s.inf_count = inf;
  if (n == 0) return s;
  if (nan > 0) {
    s.max = s.min = s.mean = NAN;
  } else {
    s.max = max;
    s.min = min;
    s.mean = sum / static_cast<double>(n);
  }
  return s;
}

}  // namespace

SideStats PairAccumulator::golden_stats() const {
  return side_stats(n_, g_nan_, g_inf_, g_max_, g_min_, g_sum_);
}

SideStats PairAccumulator::my_stats() const {
  return side_stats(n_, m_nan_, m_inf_, m_max_, m_min_, m_sum_);
}

PairMetrics PairAccumulator::metrics() const {
  PairMetrics r;
  r.elements = n_;
  r.allclose_violations = allclose_bad_;
  r.special_mismatches = special_bad_;
  if (n_ == 0) return r;
  const double n = static_cast<double>(n_);
  const double g_norm = std::sqrt(gg_), m_norm = std::sqrt(mm_);
  if (gg_ == 0 && mm_ == 0) {
    r.cosine_unrounded = 1.0;
  } else {
    r.cosine_unrounded = gm_ / (std::max(g_norm, 1e-8) * std::max(m_norm, 1e-8));
  }
  r.cosine_similarity = std::round(r.cosine_unrounded * 1e10) / 1e10;
  r.max_relative_error = max_rel_;
  r.mean_relative_error = sum_rel_ / n;
  r.max_absolute_error = max_abs_;
  r.mean_absolute_error = sum_abs_ / n;
  r.kl_divergence = std::max(0.0, kl_divergence());
  r.relative_euclidean_distance = g_norm <= kEps ? 0.0 : std::sqrt(dd_ / gg_);
  r.rmse = std::sqrt(dd_ / n);
  r.max_ulp_error = max_ulp_;
  r.mean_ulp_error = sum_ulp_ / n;
  r.snr_db = dd_ == 0 ? INFINITY : 10.0 * std::log10(gg_ / dd_);
  return r;
}

void RefereeAccumulator::add(const double* referee, const float* values, size_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(values[i]) - referee[i];
    s += d * d;
  }
  sum_sq_ += s;
  n_ += n;
}

void RefereeAccumulator::merge(const RefereeAccumulator& o) {
  sum_sq_ += o.sum_sq_;
  n_ += o.n_;
}

double RefereeAccumulator::rmse() const {
  return n_ == 0 ? 0.0 : std::sqrt(sum_sq_ / static_cast<double>(n_));
}

}  // namespace diagnose::compare
