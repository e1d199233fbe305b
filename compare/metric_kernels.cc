#include "compare/metric_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace diagnose::compare {

namespace {

// exp(x) for x <= 0, written with only the operations AVX2 has for 32- and 64-bit lanes, so
// loops over it vectorize. exp(0) is exactly 1.
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

// The error terms in float: max/min, and |m - g| / |g| (masked where |g| <= eps) to within
// 2^-23 relative, far inside the 1e-6 the metrics promise. Returns false when a value
// overflowed float (|m - g| or the relative error above 3.4e38).
bool float_errors_block(const float* g, const float* m, size_t len, BlockSums& out) {
  float g_max = -INFINITY, g_min = INFINITY, m_max = -INFINITY, m_min = INFINITY;
  float max_rel = 0, max_abs = 0, d_max = -INFINITY, d_min = INFINITY;
  double sum_rel = 0, sum_abs = 0;
#pragma omp simd reduction(max : g_max, m_max, max_rel, max_abs, d_max) reduction(min : g_min, m_min, d_min) \
    reduction(+ : sum_rel, sum_abs)
  for (size_t i = 0; i < len; ++i) {
    const float gv = g[i], mv = m[i];
    g_max = gv > g_max ? gv : g_max;
    g_min = gv < g_min ? gv : g_min;
    m_max = mv > m_max ? mv : m_max;
    m_min = mv < m_min ? mv : m_min;
    const float d = mv - gv;
    d_max = d > d_max ? d : d_max;
    d_min = d < d_min ? d : d_min;
    const float ag = std::fabs(gv), ad = std::fabs(d);
    const bool significant = ag > static_cast<float>(kEps);
    const float rel = significant ? ad / ag : 0.0f;
    const float abs_masked = significant ? ad : 0.0f;
    max_rel = rel > max_rel ? rel : max_rel;
    max_abs = abs_masked > max_abs ? abs_masked : max_abs;
    sum_rel += rel;
    sum_abs += abs_masked;
  }
  out.g_max = g_max;
  out.g_min = g_min;
  out.m_max = m_max;
  out.m_min = m_min;
  out.max_rel = max_rel;
  out.sum_rel = sum_rel;
  out.max_abs = max_abs;
  out.sum_abs = sum_abs;
  out.d_max = d_max;
  out.d_min = d_min;
  out.max_diff = std::max<double>(d_max, -d_min);
  return max_rel < INFINITY && out.max_diff < INFINITY;
}

void sum_block(StoredValues g, StoredValues m, size_t len, double atol, double rtol, UlpRule rule, WideBlock& wide,
               BlockSums& out) {
  wide.golden = g.dtype == DType::Float32 ? static_cast<const float*>(g.data) : wide.golden_storage;
  wide.mine = m.dtype == DType::Float32 ? static_cast<const float*>(m.data) : wide.mine_storage;
  if (g.dtype != DType::Float32) widen(g, 0, len, wide.golden_storage);
  if (m.dtype != DType::Float32) widen(m, 0, len, wide.mine_storage);
  sum_float_block(wide.golden, wide.mine, len, atol, rtol, rule, out);
}

// KL's sums for a block where every |m - g| < 1 (the common case), relative to the block's
// golden maximum: with w = exp(g - g_max) and d = m - g, sg = sum w, ta = sum w d and
// tb = sum w (e^d - 1 - d). KL then comes out as log1p((ta + tb) / sg) - ta / sg, with no
// difference of two large logs, so the weights w may be float exps (KL's error stays near
// float precision relative to KL itself); d and the e^d terms stay in double, because tb
// may be much larger than KL (mine = golden + a constant has KL = 0).
template <int kTerms>
KlSums kl_close_terms(const float* g, const float* m, size_t len, float g_max) {
  double sg = 0, ta = 0, tb = 0;
#pragma omp simd reduction(+ : sg, ta, tb)
  for (size_t i = 0; i < len; ++i) {
    const double w = exp_nonpositive(g[i] - g_max);
    const double d = static_cast<double>(m[i]) - g[i];
    sg += w;
    ta += w * d;
    tb += w * exp_minus_linear<kTerms>(d);
  }
  return {sg, ta, tb};
}

KlSums kl_close_block(const float* g, const float* m, size_t len, const BlockSums& block) {
  const float g_max = static_cast<float>(block.g_max);
  if (block.max_diff < 1.0 / 32) return kl_close_terms<5>(g, m, len, g_max);
  if (block.max_diff < 0.25) return kl_close_terms<8>(g, m, len, g_max);
  return kl_close_terms<13>(g, m, len, g_max);
}

void kl_far_block(const float* g, const float* m, size_t len, double g_max, double m_max, double& sg_out,
                  double& ta_out, double& sm_out) {
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

}  // namespace

// Several loops, so that each one's accumulators fit in the vector registers: the sums in
// double, the errors in float, the ULP errors, and the special values (only for a block that
// has some: float inputs square to at most 1.2e77, so the sums of squares are finite exactly
// when every element is). Counts are kept as doubles inside the loops (exact below 2^53) so
// that every lane has the same width, which the vectorizer needs.
void sum_float_block(const float* g, const float* m, size_t len, double atol, double rtol, UlpRule rule,
                     BlockSums& out) {
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
  out.allclose_bad = static_cast<uint64_t>(allclose_bad);
  if (specials) count_special_values(g, m, len, atol, rtol, out);
  out.g_sum = g_sum;
  out.m_sum = m_sum;
  out.gg = gg;
  out.mm = mm;
  out.gm = gm;
  out.dd = dd;
  out.max_ulp = max_ulp;
  out.sum_ulp = sum_ulp;
}

void widen(StoredValues values, size_t index, size_t count, float* out) {
  decode_to_float(values.dtype, static_cast<const uint8_t*>(advance(values, index).data), count, false, out);
}

StoredValues advance(StoredValues values, size_t count) {
  const size_t size = values.dtype == DType::Float32 ? 4 : 2;
  return {static_cast<const uint8_t*>(values.data) + count * size, values.dtype};
}

void count_special_values(const float* g, const float* m, size_t len, double atol, double rtol, BlockSums& out) {
  double g_nan = 0, g_inf = 0, m_nan = 0, m_inf = 0, special_bad = 0, allclose_non_finite = 0;
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
    // allclose looks at elements finite on both sides only: take out those the main loop counted
    allclose_non_finite += !both_finite && std::fabs(mv - gv) > atol + rtol * ag ? 1.0 : 0.0;
  }
  const auto count = [](double c) { return static_cast<uint64_t>(c); };
  out.g_nan = count(g_nan);
  out.g_inf = count(g_inf);
  out.m_nan = count(m_nan);
  out.m_inf = count(m_inf);
  out.special_bad = count(special_bad);
  out.allclose_bad -= count(allclose_non_finite);
}

void double_errors_block(const float* g, const float* m, size_t len, BlockSums& out) {
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
  out.max_rel = max_rel;
  out.sum_rel = sum_rel;
  out.max_abs = max_abs;
  out.sum_abs = sum_abs;
  out.max_diff = max_diff;
}

void merge_block_sums(BlockSums& into, const BlockSums& t) {
  into.g_nan += t.g_nan;
  into.g_inf += t.g_inf;
  into.m_nan += t.m_nan;
  into.m_inf += t.m_inf;
  into.special_bad += t.special_bad;
  into.allclose_bad += t.allclose_bad;
  into.g_max = std::max(into.g_max, t.g_max);
  into.g_min = std::min(into.g_min, t.g_min);
  into.m_max = std::max(into.m_max, t.m_max);
  into.m_min = std::min(into.m_min, t.m_min);
  into.g_sum += t.g_sum;
  into.m_sum += t.m_sum;
  into.gg += t.gg;
  into.mm += t.mm;
  into.gm += t.gm;
  into.dd += t.dd;
  into.max_rel = std::max(into.max_rel, t.max_rel);
  into.sum_rel += t.sum_rel;
  into.max_abs = std::max(into.max_abs, t.max_abs);
  into.sum_abs += t.sum_abs;
  into.max_ulp = std::max(into.max_ulp, t.max_ulp);
  into.sum_ulp += t.sum_ulp;
  into.d_min = std::min(into.d_min, t.d_min);
  into.d_max = std::max(into.d_max, t.d_max);
  into.max_diff = std::max(into.max_diff, t.max_diff);
}

const Kernels& portable_kernels() {
  static const Kernels k{sum_block, kl_close_block, kl_far_block};
  return k;
}

const Kernels& metric_kernels() {
  static const Kernels& k = [] {
    const char* force = std::getenv("DIAGNOSE_PORTABLE_KERNELS");
    const Kernels* avx2 = avx2_kernels();
    return avx2 && !(force && std::strcmp(force, "1") == 0) ? *avx2 : portable_kernels();
  }();
  return k;
}

}  // namespace diagnose::compare
