#include "compare/metrics.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose::compare {
namespace {

PairMetrics run(const std::vector<float>& g, const std::vector<float>& m, DType t = DType::Float32) {
  PairAccumulator acc(t, {1e-5, 1e-5});
  acc.add(g.data(), m.data(), g.size());
  return acc.metrics();
}

TEST(Metrics, MsitWorkedVectors) {
  PairMetrics a = run({1, 2, 3}, {2, 4, 6});
  EXPECT_DOUBLE_EQ(a.max_relative_error, 1.0);
  EXPECT_DOUBLE_EQ(a.mean_relative_error, 1.0);
  EXPECT_DOUBLE_EQ(a.max_absolute_error, 3.0);
  EXPECT_DOUBLE_EQ(a.cosine_similarity, 1.0);
  PairMetrics b = run(std::vector<float>(5, 1.0f), std::vector<float>(5, 10.0f));
  EXPECT_NEAR(b.relative_euclidean_distance, 9.0, 1e-12);
}

TEST(Metrics, CosineConventions) {
  EXPECT_EQ(run({0, 0}, {0, 0}).cosine_similarity, 1.0);
  EXPECT_EQ(run({0, 0}, {1, 0}).cosine_similarity, 0.0);
  EXPECT_NEAR(run({1, 0}, {0, 1}).cosine_similarity, 0.0, 1e-12);
  EXPECT_NEAR(run({1, 1}, {-1, -1}).cosine_similarity, -1.0, 1e-12);
}

TEST(Metrics, SmallGoldenValuesAreMaskedButCountInTheMean) {
  // |g| <= 2^-23 contributes 0 to relative and absolute error, yet N counts it.
  PairMetrics m = run({1e-9f, 2.0f}, {5.0f, 3.0f});
  EXPECT_DOUBLE_EQ(m.max_relative_error, 0.5);
  EXPECT_DOUBLE_EQ(m.mean_relative_error, 0.25);
  EXPECT_DOUBLE_EQ(m.max_absolute_error, 1.0);
  EXPECT_DOUBLE_EQ(m.mean_absolute_error, 0.5);
}

TEST(Metrics, KlDivergenceMatchesDirectFormula) {
  std::vector<float> g = {0.5f, 1.5f, -2.0f, 3.0f}, m = {0.4f, 1.7f, -1.0f, 2.5f};
  double gmax = 3.0, mmax = 2.5, sg = 0, sm = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    sg += std::exp(g[i] - gmax);
    sm += std::exp(m[i] - mmax);
  }
  double kl = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double logp = g[i] - gmax - std::log(sg), logq = m[i] - mmax - std::log(sm);
    kl += std::exp(logp) * (logp - logq);
  }
  EXPECT_NEAR(run(g, m).kl_divergence, kl, 1e-14);
}

TEST(Metrics, ChunkedAndMergedEqualsOnePass) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0, 3);
  std::vector<float> g(100003), m(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = dist(rng);
    m[i] = g[i] + 0.01f * dist(rng);
  }
  PairAccumulator whole(DType::Float16, {1e-3, 1e-3});
  whole.add(g.data(), m.data(), g.size());
  PairAccumulator a(DType::Float16, {1e-3, 1e-3}), b(DType::Float16, {1e-3, 1e-3});
  a.add(g.data(), m.data(), 40000);
  b.add(g.data() + 40000, m.data() + 40000, g.size() - 40000);
  b.merge(a);
  const PairMetrics x = whole.metrics(), y = b.metrics();
  EXPECT_NEAR(x.cosine_unrounded, y.cosine_unrounded, 1e-12);
  // KL's close blocks sum in float (docs/metrics.md), and other block boundaries round otherwise
  EXPECT_NEAR(x.kl_divergence, y.kl_divergence, 1e-12 + 1e-7 * x.kl_divergence);
  EXPECT_NEAR(x.mean_relative_error, y.mean_relative_error, 1e-12);
  EXPECT_EQ(x.max_absolute_error, y.max_absolute_error);
  EXPECT_EQ(x.allclose_violations, y.allclose_violations);
  EXPECT_NEAR(x.mean_ulp_error, y.mean_ulp_error, 1e-9 * x.mean_ulp_error);
  EXPECT_EQ(b.count(), g.size());
}

TEST(Metrics, NanAndInfAreCountedAndPositionsChecked) {
  const float nan = NAN, inf = INFINITY;
  PairAccumulator acc(DType::Float32, {0, 0});
  std::vector<float> g = {1, nan, inf, 2}, m = {1, nan, inf, 3};
  acc.add(g.data(), m.data(), g.size());
  EXPECT_TRUE(acc.has_nan_or_inf_golden());
  EXPECT_EQ(acc.golden_stats().nan_count, 1u);
  EXPECT_EQ(acc.golden_stats().inf_count, 1u);
  EXPECT_TRUE(std::isnan(acc.golden_stats().max));
  const PairMetrics pm = acc.metrics();
  EXPECT_EQ(pm.special_mismatches, 0u);
  EXPECT_EQ(pm.allclose_violations, 1u);  // 2 vs 3
  PairAccumulator moved(DType::Float32, {0, 0});
  std::vector<float> m2 = {nan, 1, inf, 2};
  moved.add(g.data(), m2.data(), g.size());
  EXPECT_EQ(moved.metrics().special_mismatches, 2u);
}

TEST(Metrics, NonFiniteDisagreementsByKindWithTheirFirstPositions) {
  const float nan = NAN, inf = INFINITY;
  std::vector<float> g(5000, 1.0f), m(5000, 1.0f);
  std::vector<double> truth(5000, 1.0);
  for (size_t i : {10u, 2100u, 4500u, 4600u}) g[i] = truth[i] = nan;  // target finite there
  m[3000] = -inf;                                                     // golden +Inf there
  g[3000] = inf;
  // Two ranges (two threads), merged in either order: the kinds and their lowest positions.
  PairAccumulator low(DType::Float32, {0, 0}, 0), high(DType::Float32, {0, 0}, 2500);
  low.add(g.data(), m.data(), 2500, truth.data());
  high.add(g.data() + 2500, m.data() + 2500, 2500, truth.data() + 2500);
  high.merge(low);
  const PairMetrics pm = high.metrics();
  EXPECT_EQ(pm.special_mismatches, 5u);
  ASSERT_EQ(pm.non_finite.size(), 2u);
  const NonFiniteDisagreement& nan_lost = pm.non_finite[0];
  EXPECT_EQ(nan_lost.golden, ValueClass::NaN);
  EXPECT_EQ(nan_lost.mine, ValueClass::Finite);
  EXPECT_EQ(nan_lost.truth, ValueClass::NaN);
  EXPECT_EQ(nan_lost.count, 4u);
  EXPECT_EQ(nan_lost.first, (std::vector<uint64_t>{10, 2100, 4500}));
  EXPECT_EQ(pm.non_finite[1].mine, ValueClass::MinusInf);
  EXPECT_EQ(pm.non_finite[1].truth, ValueClass::Finite);
  EXPECT_EQ(pm.non_finite_target_wrong(), 5u);
  // Agreeing NaN and Inf are no disagreement.
  PairAccumulator same(DType::Float32, {0, 0});
  same.add(g.data(), g.data(), g.size());
  EXPECT_TRUE(same.metrics().non_finite.empty());
}

TEST(Metrics, UlpErrorInTargetDtype) {
  PairMetrics m = run({1.0f, 2.0f}, {1.0f + 2 * 0x1p-10f, 2.0f}, DType::Float16);
  EXPECT_DOUBLE_EQ(m.max_ulp_error, 2.0);
  EXPECT_DOUBLE_EQ(m.mean_ulp_error, 1.0);
}

TEST(Metrics, SnrAndRmse) {
  PairMetrics m = run({3, 4}, {3, 5});
  EXPECT_NEAR(m.rmse, std::sqrt(0.5), 1e-15);
  EXPECT_NEAR(m.snr_db, 10 * std::log10(25.0), 1e-12);
  EXPECT_TRUE(std::isinf(run({1, 2}, {1, 2}).snr_db));
}

TEST(Metrics, RefereeRmse) {
  RefereeAccumulator r;
  const double ref[] = {1.0, 2.0};
  const float v[] = {1.5f, 2.5f};
  r.add(ref, v, 2);
  EXPECT_DOUBLE_EQ(r.rmse(), 0.5);
}

}  // namespace
}  // namespace diagnose::compare
