// msit's seven metrics plus the project's own, computed in one streaming pass.
//
// Formulas: docs/metrics.md. Every accumulator is a sum, a count or an online
// max/softmax state, so partial results from chunks and threads merge exactly
// (up to summation order).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compare/dtype.h"

namespace diagnose::compare {

// min/max/mean of one side on float32 data, plus NaN/Inf counts.
struct SideStats {
  double max = 0, min = 0, mean = 0;
  uint64_t nan_count = 0, inf_count = 0;
};

// What an element is, as far as NaN and Inf go.
enum class ValueClass : uint8_t { Finite, NaN, PlusInf, MinusInf };
ValueClass value_class(double v);
std::string value_class_name(ValueClass c);  // "finite", "NaN", "+Inf", "-Inf"

// How many of the lowest positions a disagreement keeps.
constexpr size_t kFirstPositions = 3;

// The elements where the golden and the target disagree on NaN, +Inf or -Inf, of one kind:
// what each side holds there and, with a float64 truth, what the truth is there.
struct NonFiniteDisagreement {
  ValueClass golden = ValueClass::Finite, mine = ValueClass::Finite;
  std::optional<ValueClass> truth;  // absent without a truth
  uint64_t count = 0;
  std::vector<uint64_t> first;  // the lowest scalar positions, at most kFirstPositions, ascending
  // The truth decides which side is right; without one, the target is wrong where it differs.
  bool target_wrong() const { return !truth || *truth != mine; }
};

struct PairMetrics {
  // msit
  double cosine_similarity = 0;  // rounded to 10 decimals
  double max_relative_error = 0;
  double mean_relative_error = 0;
  double max_absolute_error = 0;
  double mean_absolute_error = 0;
  double kl_divergence = 0;
  double relative_euclidean_distance = 0;
  // diagnose
  double cosine_unrounded = 0;
  double rmse = 0;
  double max_ulp_error = 0;  // in the target (mine) dtype
  double mean_ulp_error = 0;
  double snr_db = 0;  // +inf when identical
  // Among elements finite on both sides: |m-g| > atol + rtol*|g|.
  uint64_t allclose_violations = 0;
  // Elements where a NaN or Inf on one side is not matched by the same value on
  // the other (NaN matches NaN, +inf matches +inf).
  uint64_t special_mismatches = 0;
  uint64_t elements = 0;
  // special_mismatches by kind, the kind met first leading.
  std::vector<NonFiniteDisagreement> non_finite;
  // The elements of non_finite where the target is wrong (NonFiniteDisagreement::target_wrong).
  uint64_t non_finite_target_wrong() const;
};

struct AllcloseTolerance {
  double atol = 0;
  double rtol = 0;
};

// The sums a PairAccumulator folds, over a block (metric_kernels.h) or all blocks so far.
struct BlockSums {
  uint64_t g_nan = 0, g_inf = 0, m_nan = 0, m_inf = 0, special_bad = 0, allclose_bad = 0;
  double g_max = -INFINITY, g_min = INFINITY, m_max = -INFINITY, m_min = INFINITY;
  double g_sum = 0, m_sum = 0, gg = 0, mm = 0, gm = 0, dd = 0;  // sums of g, m, g^2, m^2, g*m, (m-g)^2
  double max_rel = 0, sum_rel = 0, max_abs = 0, sum_abs = 0, max_ulp = 0, sum_ulp = 0;
  // Signed extremes of m - g, and max |m - g| over all elements: KL's choice of kernel.
  double d_min = INFINITY, d_max = -INFINITY, max_diff = 0;
};

// Running sums for one tensor pair. Feed float32 chunks in element order
// (or disjoint ranges from several threads, then merge). `first_position` is the scalar
// position of the first element added (a thread's range), for the non-finite disagreements;
// `truth`, when given, is the float64 truth of the same elements.
class PairAccumulator {
 public:
  PairAccumulator(DType target_dtype, AllcloseTolerance tol, uint64_t first_position = 0);
  void add(const float* golden, const float* mine, size_t n, const double* truth = nullptr);
  void add(StoredValues golden, StoredValues mine, size_t n, const double* truth = nullptr);
  void merge(const PairAccumulator& other);

  SideStats golden_stats() const;
  SideStats my_stats() const;
  bool has_nan_or_inf_golden() const { return sums_.g_nan + sums_.g_inf > 0; }
  bool has_nan_or_inf_mine() const { return sums_.m_nan + sums_.m_inf > 0; }
  // Metrics over everything added; meaningful only when neither side has NaN/Inf.
  PairMetrics metrics() const;
  uint64_t count() const { return n_; }

 private:
  // Adds the disagreeing elements of a block that starts at scalar position `start` to
  // non_finite_ (it reads mapped bytes: no frame-local object with a destructor may hold them).
  void record_non_finite(const float* g, const float* m, size_t len, uint64_t start, const double* truth);
  DType target_;
  AllcloseTolerance tol_;
  uint64_t first_position_ = 0;
  uint64_t n_ = 0;
  std::vector<NonFiniteDisagreement> non_finite_;
  BlockSums sums_;
  // KL as sums with an online maximum (docs/metrics.md), w = exp(g - Mg), d = m - g:
  // blocks whose |d| < 1 everywhere add sg = sum w, ta = sum w d, tb = sum w (e^d - 1 - d);
  // the others add far_sg, far_ta (the same, in double precision) and sm = sum exp(m - Mm).
  double kl_divergence() const;
  double kl_mg_ = -std::numeric_limits<double>::infinity(), kl_sg_ = 0, kl_ta_ = 0, kl_tb_ = 0;
  double kl_far_sg_ = 0, kl_far_ta_ = 0;
  double kl_mm_ = -std::numeric_limits<double>::infinity(), kl_sm_ = 0;
};

// RMSE between a tensor and its float64 truth over the elements where both are finite, and
// the truth's RMS over the same elements.
class RefereeAccumulator {
 public:
  void add(const double* referee, const float* values, size_t n);
  void add(const double* referee, StoredValues values, size_t n);
  void merge(const RefereeAccumulator& other);
  double rmse() const;
  double truth_rms() const;
  uint64_t count() const { return n_; }  // finite elements

 private:
  uint64_t n_ = 0;
  double sum_sq_ = 0, truth_sq_ = 0;
};

}  // namespace diagnose::compare
