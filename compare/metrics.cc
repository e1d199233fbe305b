#include "compare/metrics.h"

#include <algorithm>
#include <cmath>

#include "compare/metric_kernels.h"

namespace diagnose::compare {

namespace {

UlpRule ulp_rule(DType t) {
  switch (t) {
    case DType::Float16: return {true, 0x1p-10, 0x1p-24};
    case DType::BFloat16: return {true, 0x1p-7, 0x1p-133};
    case DType::Float32:
    case DType::Complex64: return {true, 0x1p-23, 0x1p-149};
    default: return {false, 0, 0};
  }
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

// The entry of `kinds` for one kind of disagreement, appended when there is none.
NonFiniteDisagreement& kind_of(std::vector<NonFiniteDisagreement>& kinds, ValueClass golden, ValueClass mine,
                               std::optional<ValueClass> truth) {
  for (NonFiniteDisagreement& d : kinds)
    if (d.golden == golden && d.mine == mine && d.truth == truth) return d;
  return kinds.emplace_back(NonFiniteDisagreement{golden, mine, truth, 0, {}});
}

}  // namespace

ValueClass value_class(double v) {
  if (v != v) return ValueClass::NaN;
  if (v == INFINITY) return ValueClass::PlusInf;
  if (v == -INFINITY) return ValueClass::MinusInf;
  return ValueClass::Finite;
}

std::string value_class_name(ValueClass c) {
  switch (c) {
    case ValueClass::NaN: return "NaN";
    case ValueClass::PlusInf: return "+Inf";
    case ValueClass::MinusInf: return "-Inf";
    case ValueClass::Finite: break;
  }
  return "finite";
}

uint64_t PairMetrics::non_finite_target_wrong() const {
  uint64_t wrong = 0;
  for (const NonFiniteDisagreement& d : non_finite) wrong += d.target_wrong() ? d.count : 0;
  return wrong;
}

PairAccumulator::PairAccumulator(DType target_dtype, AllcloseTolerance tol, uint64_t first_position)
    : target_(target_dtype), tol_(tol), first_position_(first_position) {}

void PairAccumulator::add(const float* golden, const float* mine, size_t n, const double* truth) {
  add(StoredValues{golden, DType::Float32}, StoredValues{mine, DType::Float32}, n, truth);
}

void PairAccumulator::record_non_finite(const float* g, const float* m, size_t len, uint64_t start,
                                        const double* truth) {
  for (size_t i = 0; i < len; ++i) {
    const ValueClass golden = value_class(g[i]), mine = value_class(m[i]);
    if (golden == mine) continue;
    std::optional<ValueClass> in_truth;
    if (truth) in_truth = value_class(truth[i]);
    NonFiniteDisagreement& kind = kind_of(non_finite_, golden, mine, in_truth);
    ++kind.count;
    if (kind.first.size() < kFirstPositions) kind.first.push_back(start + i);
  }
}

void PairAccumulator::add(StoredValues golden, StoredValues mine, size_t n, const double* truth) {
  const UlpRule rule = ulp_rule(target_);
  const Kernels& kernels = metric_kernels();
  // Trivially destructible, as every frame that reads mapped bytes must be (mapped_file.h).
  WideBlock wide;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    BlockSums b;
    kernels.sum(advance(golden, start), advance(mine, start), len, tol_.atol, tol_.rtol, rule, wide, b);
    const float* g = wide.golden;
    const float* m = wide.mine;
    if (!rule.by_exponent) {
      for (size_t i = 0; i < len; ++i) {
        const double ulp = std::fabs(static_cast<double>(m[i]) - g[i]) / ulp_at(target_, g[i]);
        b.max_ulp = std::max(b.max_ulp, ulp);
        b.sum_ulp += ulp;
      }
    }
    KlSums kl;
    double far_sg = 0, far_ta = 0, sm = 0;
    if (b.max_diff < 1.0)
      kl = kernels.kl_close(g, m, len, b);
    else
      kernels.kl_far(g, m, len, b.g_max, b.m_max, far_sg, far_ta, sm);
    if (b.special_bad > 0) record_non_finite(g, m, len, first_position_ + n_, truth ? truth + start : nullptr);
    // No mapped bytes are read from here on, so the block may hold what has a destructor. It
    // becomes an accumulator of its own and merges in: one place folds sums, and the merge
    // rescales the softmax sums to the running maxima.
    PairAccumulator block(target_, tol_);
    block.n_ = len;
    block.sums_ = b;
    block.kl_mg_ = b.g_max;
    block.kl_sg_ = kl.sg;
    block.kl_ta_ = kl.ta;
    block.kl_tb_ = kl.tb;
    if (b.max_diff >= 1.0) block.kl_mm_ = b.m_max;
    block.kl_far_sg_ = far_sg;
    block.kl_far_ta_ = far_ta;
    block.kl_sm_ = sm;
    merge(block);
  }
}

void PairAccumulator::merge(const PairAccumulator& o) {
  n_ += o.n_;
  merge_block_sums(sums_, o.sums_);
  for (const NonFiniteDisagreement& d : o.non_finite_) {
    NonFiniteDisagreement& kind = kind_of(non_finite_, d.golden, d.mine, d.truth);
    kind.count += d.count;
    kind.first.insert(kind.first.end(), d.first.begin(), d.first.end());
    std::sort(kind.first.begin(), kind.first.end());
    kind.first.resize(std::min(kind.first.size(), kFirstPositions));
  }

  PairAccumulator other = o;  // its KL sums, rescaled to the common maxima below
  rescale(kl_mg_, other.kl_mg_, kl_sg_, kl_ta_, kl_tb_, kl_far_sg_, kl_far_ta_);
  rescale(other.kl_mg_, kl_mg_, other.kl_sg_, other.kl_ta_, other.kl_tb_, other.kl_far_sg_, other.kl_far_ta_);
  kl_sg_ += other.kl_sg_;
  kl_ta_ += other.kl_ta_;
  kl_tb_ += other.kl_tb_;
  kl_far_sg_ += other.kl_far_sg_;
  kl_far_ta_ += other.kl_far_ta_;
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
  return side_stats(n_, sums_.g_nan, sums_.g_inf, sums_.g_max, sums_.g_min, sums_.g_sum);
}

SideStats PairAccumulator::my_stats() const {
  return side_stats(n_, sums_.m_nan, sums_.m_inf, sums_.m_max, sums_.m_min, sums_.m_sum);
}

PairMetrics PairAccumulator::metrics() const {
  PairMetrics r;
  r.elements = n_;
  r.allclose_violations = sums_.allclose_bad;
  r.special_mismatches = sums_.special_bad;
  r.non_finite = non_finite_;
  std::stable_sort(
      r.non_finite.begin(), r.non_finite.end(),
      [](const NonFiniteDisagreement& a, const NonFiniteDisagreement& b) { return a.first[0] < b.first[0]; });
  if (n_ == 0) return r;
  const double n = static_cast<double>(n_);
  const double g_norm = std::sqrt(sums_.gg), m_norm = std::sqrt(sums_.mm);
  if (sums_.gg == 0 && sums_.mm == 0) {
    r.cosine_unrounded = 1.0;
  } else {
    r.cosine_unrounded = sums_.gm / (std::max(g_norm, 1e-8) * std::max(m_norm, 1e-8));
  }
  r.cosine_similarity = std::round(r.cosine_unrounded * 1e10) / 1e10;
  r.max_relative_error = sums_.max_rel;
  r.mean_relative_error = sums_.sum_rel / n;
  r.max_absolute_error = sums_.max_abs;
  r.mean_absolute_error = sums_.sum_abs / n;
  r.kl_divergence = std::max(0.0, kl_divergence());
  r.relative_euclidean_distance = g_norm <= kEps ? 0.0 : std::sqrt(sums_.dd / sums_.gg);
  r.rmse = std::sqrt(sums_.dd / n);
  r.max_ulp_error = sums_.max_ulp;
  r.mean_ulp_error = sums_.sum_ulp / n;
  r.snr_db = sums_.dd == 0 ? INFINITY : 10.0 * std::log10(sums_.gg / sums_.dd);
  return r;
}

void RefereeAccumulator::add(const double* referee, const float* values, size_t n) {
  double s = 0, t = 0;
  uint64_t finite = 0;
#pragma omp simd reduction(+ : s, t, finite)
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(values[i]) - referee[i];
    const bool ok = std::isfinite(d);  // false when either side is NaN or Inf
    s += ok ? d * d : 0.0;
    t += ok ? referee[i] * referee[i] : 0.0;
    finite += ok ? 1 : 0;
  }
  sum_sq_ += s;
  truth_sq_ += t;
  n_ += finite;
}

void RefereeAccumulator::add(const double* referee, StoredValues values, size_t n) {
  if (values.dtype == DType::Float32) return add(referee, static_cast<const float*>(values.data), n);
  float wide[kBlock];  // trivially destructible, as every frame that reads mapped bytes must be
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    widen(values, start, len, wide);
    add(referee + start, wide, len);
  }
}

void RefereeAccumulator::merge(const RefereeAccumulator& o) {
  sum_sq_ += o.sum_sq_;
  truth_sq_ += o.truth_sq_;
  n_ += o.n_;
}

double RefereeAccumulator::rmse() const { return n_ == 0 ? 0.0 : std::sqrt(sum_sq_ / static_cast<double>(n_)); }

double RefereeAccumulator::truth_rms() const { return n_ == 0 ? 0.0 : std::sqrt(truth_sq_ / static_cast<double>(n_)); }

}  // namespace diagnose::compare
