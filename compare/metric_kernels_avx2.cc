// metric_kernels.h's kernels written with AVX2+FMA (and F16C) intrinsics, for CPUs that have them.
//
// Each loop keeps its accumulators in registers (the compiler's vectorized loops of the
// portable kernels spilled them to the stack), converts to double only what needs double
// (the sums behind cosine, the means and the squared error), and does the rest on eight
// float lanes. A block's last len % 8 elements go through the portable kernels.
//
// Every function here carries the target attribute instead of the file being compiled
// with -mavx2: an inline function from a header compiled with AVX2 could otherwise be the
// copy the linker keeps for the whole program, and crash on a CPU without it.
#include "compare/metric_kernels.h"

#if defined(__x86_64__)  // elsewhere (aarch64) the portable kernels alone
#include <immintrin.h>

#include <algorithm>

#define DIAGNOSE_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace diagnose::compare {

namespace {

DIAGNOSE_AVX2 inline __m256d low_half(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
DIAGNOSE_AVX2 inline __m256d high_half(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
// The eight float lanes of v added into four double lanes.
DIAGNOSE_AVX2 inline __m256d widen_add(__m256d acc, __m256 v) {
  return _mm256_add_pd(acc, _mm256_add_pd(low_half(v), high_half(v)));
}

DIAGNOSE_AVX2 inline double lanes_sum(__m256d v) {
  alignas(32) double x[4];
  _mm256_store_pd(x, v);
  return (x[0] + x[1]) + (x[2] + x[3]);
}
DIAGNOSE_AVX2 inline double lanes_max(__m256d v) {
  alignas(32) double x[4];
  _mm256_store_pd(x, v);
  return std::max(std::max(x[0], x[1]), std::max(x[2], x[3]));
}
DIAGNOSE_AVX2 inline float lanes_max(__m256 v) {
  alignas(32) float x[8];
  _mm256_store_ps(x, v);
  return *std::max_element(x, x + 8);
}
DIAGNOSE_AVX2 inline float lanes_min(__m256 v) {
  alignas(32) float x[8];
  _mm256_store_ps(x, v);
  return *std::min_element(x, x + 8);
}
DIAGNOSE_AVX2 inline uint64_t lanes_sum(__m256i v) {
  alignas(32) uint64_t x[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(x), v);
  return x[0] + x[1] + x[2] + x[3];
}

// max/min that keep the accumulator when the new value is NaN (as `v > acc ? v : acc`):
// maxps returns its second operand when either is NaN.
DIAGNOSE_AVX2 inline __m256 keep_max(__m256 v, __m256 acc) { return _mm256_max_ps(v, acc); }
DIAGNOSE_AVX2 inline __m256 keep_min(__m256 v, __m256 acc) { return _mm256_min_ps(v, acc); }

constexpr size_t kRun = 64;  // float partial sums cover this many elements before joining a double sum

// Four values of one side as float32, from how it is stored.
template <DType kStored>
struct Four;
template <>
struct Four<DType::Float32> {
  DIAGNOSE_AVX2 static __m128 load(const void* values, size_t i) {
    return _mm_loadu_ps(static_cast<const float*>(values) + i);
  }
};
template <>
struct Four<DType::Float16> {
  DIAGNOSE_AVX2 static __m128 load(const void* values, size_t i) {
    return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(values) + i)));
  }
};
template <>
struct Four<DType::BFloat16> {  // bfloat16 is the top half of a float32
  DIAGNOSE_AVX2 static __m128 load(const void* values, size_t i) {
    const __m128i bits = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(values) + i));
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(bits), 16));
  }
};

// The sums behind cosine, the means, RMSE/RED/SNR, and the allclose count, in double: four
// elements per step, seven accumulators. This is the first loop over a block, so it also
// widens 16-bit sides into float32 for the loops after it: the file's bytes are read once,
// where the arithmetic hides their wait for memory.
template <DType kGolden, DType kMine>
DIAGNOSE_AVX2 void double_sums(const void* g, const void* m, size_t n, float* g_wide, float* m_wide, double atol,
                               double rtol, BlockSums& out) {
  const __m256d sign = _mm256_set1_pd(-0.0), atol_v = _mm256_set1_pd(atol), rtol_v = _mm256_set1_pd(rtol);
  __m256d g_sum = _mm256_setzero_pd(), m_sum = g_sum, gg = g_sum, mm = g_sum, gm = g_sum, dd = g_sum;
  __m256i allclose_bad = _mm256_setzero_si256();
  for (size_t i = 0; i < n; i += 4) {
    const __m128 g4 = Four<kGolden>::load(g, i), m4 = Four<kMine>::load(m, i);
    if constexpr (kGolden != DType::Float32) _mm_storeu_ps(g_wide + i, g4);
    if constexpr (kMine != DType::Float32) _mm_storeu_ps(m_wide + i, m4);
    const __m256d gv = _mm256_cvtps_pd(g4), mv = _mm256_cvtps_pd(m4);
    g_sum = _mm256_add_pd(g_sum, gv);
    m_sum = _mm256_add_pd(m_sum, mv);
    gg = _mm256_fmadd_pd(gv, gv, gg);
    mm = _mm256_fmadd_pd(mv, mv, mm);
    gm = _mm256_fmadd_pd(gv, mv, gm);
    const __m256d d = _mm256_sub_pd(mv, gv);
    dd = _mm256_fmadd_pd(d, d, dd);
    // |d| > atol + rtol |g|, rounded as numpy rounds it (no fused multiply-add); NaN compares false
    const __m256d limit = _mm256_add_pd(atol_v, _mm256_mul_pd(rtol_v, _mm256_andnot_pd(sign, gv)));
    const __m256d bad = _mm256_cmp_pd(_mm256_andnot_pd(sign, d), limit, _CMP_GT_OQ);
    allclose_bad = _mm256_sub_epi64(allclose_bad, _mm256_castpd_si256(bad));  // a true lane is -1
  }
  out.g_sum = lanes_sum(g_sum);
  out.m_sum = lanes_sum(m_sum);
  out.gg = lanes_sum(gg);
  out.mm = lanes_sum(mm);
  out.gm = lanes_sum(gm);
  out.dd = lanes_sum(dd);
  out.allclose_bad = lanes_sum(allclose_bad);
}

using DoubleSums = void (*)(const void*, const void*, size_t, float*, float*, double, double, BlockSums&);

template <DType kGolden>
DoubleSums double_sums_for(DType mine) {
  switch (mine) {
    case DType::Float16: return double_sums<kGolden, DType::Float16>;
    case DType::BFloat16: return double_sums<kGolden, DType::BFloat16>;
    default: return double_sums<kGolden, DType::Float32>;
  }
}

DoubleSums double_sums_for(DType golden, DType mine) {
  switch (golden) {
    case DType::Float16: return double_sums_for<DType::Float16>(mine);
    case DType::BFloat16: return double_sums_for<DType::BFloat16>(mine);
    default: return double_sums_for<DType::Float32>(mine);
  }
}

// The signed extremes of m - g, and the relative and absolute errors (masked where
// |g| <= eps), on float lanes as the portable kernel computes them. Their sums run in float
// for kRun elements, eight terms per lane (all positive: within 7 * 2^-24 relative), then
// join double ones. Returns false when float overflowed.
DIAGNOSE_AVX2 bool float_errors(const float* g, const float* m, size_t n, BlockSums& out) {
  const __m256 sign = _mm256_set1_ps(-0.0f), eps = _mm256_set1_ps(static_cast<float>(kEps));
  __m256 d_max = _mm256_set1_ps(-INFINITY), d_min = _mm256_set1_ps(INFINITY);
  __m256 max_rel = _mm256_setzero_ps(), max_abs = max_rel;
  __m256d sum_rel = _mm256_setzero_pd(), sum_abs = sum_rel;
  for (size_t run = 0; run < n; run += kRun) {
    const size_t end = std::min(n, run + kRun);
    __m256 run_rel = _mm256_setzero_ps(), run_abs = run_rel;
    for (size_t i = run; i < end; i += 8) {
      const __m256 gv = _mm256_loadu_ps(g + i), d = _mm256_sub_ps(_mm256_loadu_ps(m + i), gv);
      d_max = keep_max(d, d_max);
      d_min = keep_min(d, d_min);
      const __m256 ad = _mm256_andnot_ps(sign, d), ag = _mm256_andnot_ps(sign, gv);
      const __m256 significant = _mm256_cmp_ps(ag, eps, _CMP_GT_OQ);
      const __m256 rel = _mm256_and_ps(_mm256_div_ps(ad, ag), significant);  // 0/0 masked away
      const __m256 abs_masked = _mm256_and_ps(ad, significant);
      max_rel = keep_max(rel, max_rel);
      max_abs = keep_max(abs_masked, max_abs);
      run_rel = _mm256_add_ps(run_rel, rel);
      run_abs = _mm256_add_ps(run_abs, abs_masked);
    }
    sum_rel = widen_add(sum_rel, run_rel);
    sum_abs = widen_add(sum_abs, run_abs);
  }
  out.d_max = lanes_max(d_max);
  out.d_min = lanes_min(d_min);
  out.max_diff = std::max(out.d_max, -out.d_min);
  out.max_rel = lanes_max(max_rel);
  out.max_abs = lanes_max(max_abs);
  out.sum_rel = lanes_sum(sum_rel);
  out.sum_abs = lanes_sum(sum_abs);
  return out.max_diff < INFINITY && out.sum_rel < INFINITY && out.sum_abs < INFINITY;
}

// The ULP error |m - g| / spacing(g), where spacing(g) = max(2^floor(log2 |g|) step, smallest)
// follows from g's biased exponent e. 2^(128 - e), twice 1 / 2^floor(log2 |g|), is built in
// the exponent field of a float (255 - e fits it for e from 1 to 254; e = 0, zero or
// subnormal, is taken as 1, which the cap makes equal for every rule). The cap at
// 2 step / smallest and the factor 1 / (2 step) are powers of two, so
//   ulp = |m - g| min(2^(128 - e), 2 step / smallest) / (2 step)
// is exact in float until it overflows; the factor is applied to the block's results.
struct UlpScale {
  bool by_exponent;  // UlpRule's: otherwise the caller measures ULPs element by element
  bool in_float;     // the cap is a float (true for every rule the comparison has)
  float cap;         // 2 step / smallest
  double inverse;    // 1 / (2 step)
};

UlpScale ulp_scale(UlpRule rule) {
  if (!rule.by_exponent) return {false, false, 0, 0};
  const double cap = 2 * rule.step / rule.smallest;
  return {true, cap <= 0x1p127, static_cast<float>(cap), 0.5 / rule.step};
}

DIAGNOSE_AVX2 inline __m256 inverse_power(__m256 gv) {
  const __m256i e = _mm256_max_epi32(_mm256_and_si256(_mm256_castps_si256(gv), _mm256_set1_epi32(0x7F800000)),
                                     _mm256_set1_epi32(1 << 23));
  return _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_set1_epi32(255 << 23), e));
}

// Each side's max and min, and the ULP error on float lanes (sums as in float_errors).
// Returns false when the ULP errors are still to be measured in double (float overflowed).
DIAGNOSE_AVX2 bool extremes_and_ulp(const float* g, const float* m, size_t n, UlpScale scale, BlockSums& out) {
  const __m256 sign = _mm256_set1_ps(-0.0f), cap = _mm256_set1_ps(scale.cap);
  __m256 g_max = _mm256_set1_ps(-INFINITY), m_max = g_max, g_min = _mm256_set1_ps(INFINITY), m_min = g_min;
  __m256 max_ulp = _mm256_setzero_ps();
  __m256d sum_ulp = _mm256_setzero_pd();
  for (size_t run = 0; run < n; run += kRun) {
    const size_t end = std::min(n, run + kRun);
    __m256 run_ulp = _mm256_setzero_ps();
    for (size_t i = run; i < end; i += 8) {
      const __m256 gv = _mm256_loadu_ps(g + i), mv = _mm256_loadu_ps(m + i);
      g_max = keep_max(gv, g_max);
      g_min = keep_min(gv, g_min);
      m_max = keep_max(mv, m_max);
      m_min = keep_min(mv, m_min);
      if (!scale.in_float) continue;
      const __m256 ad = _mm256_andnot_ps(sign, _mm256_sub_ps(mv, gv));
      const __m256 ulp = _mm256_mul_ps(ad, _mm256_min_ps(inverse_power(gv), cap));
      max_ulp = keep_max(ulp, max_ulp);
      run_ulp = _mm256_add_ps(run_ulp, ulp);
    }
    sum_ulp = widen_add(sum_ulp, run_ulp);
  }
  out.g_max = lanes_max(g_max);
  out.g_min = lanes_min(g_min);
  out.m_max = lanes_max(m_max);
  out.m_min = lanes_min(m_min);
  out.max_ulp = lanes_max(max_ulp) * scale.inverse;
  out.sum_ulp = lanes_sum(sum_ulp) * scale.inverse;
  return !scale.by_exponent || (scale.in_float && out.sum_ulp < INFINITY);
}

// The ULP error in double, for a block where float overflowed: |m - g| up to 6.8e38 and
// ulp up to 6.8e38 / 2^-149.
DIAGNOSE_AVX2 void wide_ulp(const float* g, const float* m, size_t n, UlpScale scale, BlockSums& out) {
  const __m256d sign = _mm256_set1_pd(-0.0), cap = _mm256_set1_pd(scale.cap);
  __m256d max_ulp = _mm256_setzero_pd(), sum_ulp = max_ulp;
  for (size_t i = 0; i < n; i += 4) {
    const __m256d gv = _mm256_cvtps_pd(_mm_loadu_ps(g + i)), mv = _mm256_cvtps_pd(_mm_loadu_ps(m + i));
    const __m256 power = inverse_power(_mm256_castps128_ps256(_mm_loadu_ps(g + i)));
    const __m256d inverse = _mm256_min_pd(low_half(power), cap);
    const __m256d ulp = _mm256_mul_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(mv, gv)), inverse);
    max_ulp = _mm256_max_pd(ulp, max_ulp);
    sum_ulp = _mm256_add_pd(sum_ulp, ulp);
  }
  out.max_ulp = lanes_max(max_ulp) * scale.inverse;
  out.sum_ulp = lanes_sum(sum_ulp) * scale.inverse;
}

DIAGNOSE_AVX2 void sum_block(StoredValues g_stored, StoredValues m_stored, size_t len, double atol, double rtol,
                             UlpRule rule, WideBlock& wide, BlockSums& out) {
  const bool g_wide = g_stored.dtype != DType::Float32, m_wide = m_stored.dtype != DType::Float32;
  wide.golden = g_wide ? wide.golden_storage : static_cast<const float*>(g_stored.data);
  wide.mine = m_wide ? wide.mine_storage : static_cast<const float*>(m_stored.data);
  const size_t n = len & ~size_t{7};
  double_sums_for(g_stored.dtype, m_stored.dtype)(g_stored.data, m_stored.data, n, wide.golden_storage,
                                                  wide.mine_storage, atol, rtol, out);
  const float* g = wide.golden;
  const float* m = wide.mine;
  const bool specials = !(std::isfinite(out.gg) && std::isfinite(out.mm));
  if (!float_errors(g, m, n, out) && !specials) double_errors_block(g, m, n, out);
  const UlpScale scale = ulp_scale(rule);
  if (!extremes_and_ulp(g, m, n, scale, out) && !specials) wide_ulp(g, m, n, scale, out);
  if (specials) count_special_values(g, m, n, atol, rtol, out);
  if (n < len) {
    if (g_wide) widen(g_stored, n, len - n, wide.golden_storage + n);
    if (m_wide) widen(m_stored, n, len - n, wide.mine_storage + n);
    BlockSums tail;
    sum_float_block(g + n, m + n, len - n, atol, rtol, rule, tail);
    merge_block_sums(out, tail);
  }
}

// exp(x) for x <= 0 on eight float lanes: ExpForm<float>'s method, as the portable kernel.
DIAGNOSE_AVX2 inline __m256 exp_nonpositive_lanes(__m256 x) {
  using Form = ExpForm<float>;
  x = _mm256_max_ps(x, _mm256_set1_ps(Form::kLowest));
  const __m256 shifter = _mm256_set1_ps(Form::kShifter);
  const __m256 shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(1.4426950408889634f), shifter);
  const __m256 k = _mm256_sub_ps(shifted, shifter);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(Form::kLn2High), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(Form::kLn2Low), r);
  __m256 p = _mm256_set1_ps(static_cast<float>(kInverseFactorial[Form::kDegree]));
  for (int i = Form::kDegree - 1; i >= 0; --i)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(static_cast<float>(kInverseFactorial[i])));
  const __m256i scale = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(Form::kBias)), Form::kMantissaBits);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

// e^u - 1 - u on float lanes, to float precision (truncation 2 bound^terms / (terms + 2)!
// under 1.3e-8 relative, see exp_minus_linear) for |u| below the bound of kTerms: 1/32 for
// 4 terms, 1/8 for 5, 1/4 for 6, 1 for 10.
template <int kTerms>
DIAGNOSE_AVX2 inline __m256 exp_minus_linear_lanes(__m256 u) {
  __m256 p = _mm256_set1_ps(static_cast<float>(kInverseFactorial[kTerms + 1]));
  for (int k = kTerms; k >= 2; --k) p = _mm256_fmadd_ps(p, u, _mm256_set1_ps(static_cast<float>(kInverseFactorial[k])));
  return _mm256_mul_ps(_mm256_mul_ps(u, u), p);
}

// KL's terms for one close block in float, around a shift c of m - g: with w = exp(g - g_max),
// d = m - g and u = d - c, the sums S = sum w, A_c = sum w u and B = sum w (e^u - 1 - u).
// B's terms are about u^2 / 2, so float is accurate relative to KL (about the variance of u
// under p) when c is near the weighted mean of d; terms in d itself would not be, when d
// holds a large common shift. A_c, which KL depends on through (A_c / S) (A_c / S + B / S),
// is summed around c for the same reason. The first pass (kFirst) takes all three and keeps
// the weights in `w`; a later one takes B again, around another shift, from the kept weights.
struct KlTerms {
  double s = 0, a_shifted = 0, b = 0;
};

template <int kTerms, bool kFirst>
DIAGNOSE_AVX2 void kl_pass(const float* g, const float* m, size_t n, float g_max, float shift, float* w, KlTerms& out) {
  const __m256 g_max_v = _mm256_set1_ps(g_max), shift_v = _mm256_set1_ps(shift);
  __m256d s_total = _mm256_setzero_pd(), a_total = s_total, b_total = s_total;
  for (size_t run = 0; run < n; run += kRun) {
    const size_t end = std::min(n, run + kRun);
    __m256 s = _mm256_setzero_ps(), a = s, b = s;
    for (size_t i = run; i < end; i += 8) {
      const __m256 gv = _mm256_loadu_ps(g + i);
      const __m256 u = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(m + i), gv), shift_v);
      __m256 wv;
      if constexpr (kFirst) {
        wv = exp_nonpositive_lanes(_mm256_sub_ps(gv, g_max_v));
        _mm256_store_ps(w + i, wv);
        s = _mm256_add_ps(s, wv);
        a = _mm256_fmadd_ps(wv, u, a);
      } else {
        wv = _mm256_load_ps(w + i);
      }
      b = _mm256_fmadd_ps(wv, exp_minus_linear_lanes<kTerms>(u), b);
    }
    s_total = widen_add(s_total, s);
    a_total = widen_add(a_total, a);
    b_total = widen_add(b_total, b);
  }
  if constexpr (kFirst) {
    out.s = lanes_sum(s_total);
    out.a_shifted = lanes_sum(a_total);
  }
  out.b = lanes_sum(b_total);
}

// kl_pass with the fewest series terms for |u| up to the block's largest distance from the shift.
template <bool kFirst>
DIAGNOSE_AVX2 void kl_pass(const BlockSums& block, const float* g, const float* m, size_t n, float shift, float* w,
                           KlTerms& out) {
  const float g_max = static_cast<float>(block.g_max);
  const double spread = std::max(block.d_max - shift, shift - block.d_min);
  if (spread < 1.0 / 32)
    kl_pass<4, kFirst>(g, m, n, g_max, shift, w, out);
  else if (spread < 1.0 / 8)
    kl_pass<5, kFirst>(g, m, n, g_max, shift, w, out);
  else if (spread < 0.25)
    kl_pass<6, kFirst>(g, m, n, g_max, shift, w, out);
  else
    kl_pass<10, kFirst>(g, m, n, g_max, shift, w, out);
}

// KL's sums for a close block, on float lanes. The shift is first the plain mean of d (from
// the block's sums); where the weighted mean a = c + A_c / S lies far from it (A_c / S squared
// above 1.5 B / S, so that KL, about B / S - (A_c / S)^2 / 2, may be under a quarter of B / S),
// B is summed again around a. The sums then return to the kernel contract's form:
//   sum w d = A_c + c S,   sum w (e^d - 1 - d) = S (e^c - 1 - c) + (e^c - 1) A_c + e^c B.
// Float partial sums cover kRun elements (eight terms per lane) before they join double
// ones. Blocks where the spread of d is 1 or more go to the portable kernel.
DIAGNOSE_AVX2 KlSums kl_close_block(const float* g, const float* m, size_t len, const BlockSums& block) {
  const size_t n = len & ~size_t{7};
  if (block.d_max - block.d_min >= 1 || len > kBlock) return portable_kernels().kl_close(g, m, len, block);
  KlSums sums;
  if (n > 0) {
    alignas(32) float w[kBlock];
    float shift = static_cast<float>((block.m_sum - block.g_sum) / static_cast<double>(len));
    KlTerms t;
    kl_pass<true>(block, g, m, n, shift, w, t);
    const double off = t.a_shifted / t.s;
    if (off * off > 1.5 * t.b / t.s) {
      const float weighted_mean = static_cast<float>(shift + off);
      t.a_shifted -= (static_cast<double>(weighted_mean) - shift) * t.s;
      shift = weighted_mean;
      kl_pass<false>(block, g, m, n, shift, w, t);
    }
    const double c = shift, e_c_minus_1 = std::expm1(c);
    sums = {t.s, t.a_shifted + c * t.s,
            t.s * exp_minus_linear<13>(c) + e_c_minus_1 * t.a_shifted + (1 + e_c_minus_1) * t.b};
  }
  if (n < len) {
    const KlSums tail = portable_kernels().kl_close(g + n, m + n, len - n, block);
    sums.sg += tail.sg;
    sums.ta += tail.ta;
    sums.tb += tail.tb;
  }
  return sums;
}

}  // namespace

const Kernels* avx2_kernels() {
  static const Kernels k{sum_block, kl_close_block, portable_kernels().kl_far};
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  return supported ? &k : nullptr;
}

}  // namespace diagnose::compare

#undef DIAGNOSE_AVX2
#else
const diagnose::compare::Kernels* diagnose::compare::avx2_kernels() { return nullptr; }
#endif
