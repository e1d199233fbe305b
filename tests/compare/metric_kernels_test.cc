#include "compare/metric_kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace diagnose::compare {
namespace {

struct Block {
  std::string name;
  std::vector<float> g, m;
};

// Blocks of every kind the kernels branch on, at lengths around the 8-lane steps.
std::vector<Block> blocks() {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 1);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Block> out;
  for (size_t len : {1, 7, 8, 9, 63, 64, 65, 1000, 2047, 2048}) {
    auto make = [&](const std::string& kind, auto golden, auto mine) {
      Block b{kind + "/" + std::to_string(len), std::vector<float>(len), std::vector<float>(len)};
      for (size_t i = 0; i < len; ++i) {
        b.g[i] = golden(i);
        b.m[i] = mine(i, b.g[i]);
      }
      out.push_back(std::move(b));
    };
    make(
        "close", [&](size_t) { return 3 * normal(rng); }, [&](size_t, float g) { return g + 1e-3f * normal(rng); });
    make(
        "shift", [&](size_t) { return 3 * normal(rng); }, [&](size_t, float g) { return g + 0.7f; });
    // m - g spread over (1/32, 1/4) and (1/4, 1): KL's series takes more terms
    make(
        "mid_spread", [&](size_t) { return normal(rng); },
        [&](size_t i, float g) { return g + (i % 17 == 0 ? 0.2f : 0.01f * normal(rng)); });
    make(
        "spread", [&](size_t) { return normal(rng); },
        [&](size_t i, float g) { return g + (i % 29 == 0 ? 0.9f : 0.01f * normal(rng)); });
    // the weighted mean of m - g (p = softmax(g)) far from its plain mean
    make(
        "weighted_shift", [&](size_t) { return 3 * normal(rng); },
        [&](size_t, float g) { return g + (g > 4 ? 0.3f : 0.0f) + 1e-5f * normal(rng); });
    make(
        "far", [&](size_t) { return normal(rng); }, [&](size_t, float g) { return 4 * g + 2; });
    make(
        "zeros_and_subnormals",
        [&](size_t i) { return i % 3 == 0   ? 0.0f
                               : i % 3 == 1 ? 1e-41f * normal(rng)
                                            : normal(rng); },
        [&](size_t, float g) { return g + 1e-6f * normal(rng); });
    make(
        "float_overflow", [&](size_t i) { return i % 5 == 0 ? 3e38f : 1e-30f * normal(rng); },
        [&](size_t i, float) { return i % 5 == 0 ? -3e38f : 1e8f; });
    make(
        "specials", [&](size_t i) { return i % 7 == 0    ? nan
                                           : i % 11 == 0 ? inf
                                                         : normal(rng); },
        [&](size_t i, float g) { return i % 13 == 0  ? -inf
                                        : i % 7 == 0 ? nan
                                                     : g + 0.1f; });
  }
  return out;
}

// float32 to float16 bits, truncating (subnormals become 0): any bits will do as input.
uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = (x >> 16) & 0x8000;
  const int biased = static_cast<int>((x >> 23) & 0xFF);
  const uint32_t mantissa = x & 0x7FFFFF;
  if (biased == 0xFF) return sign | 0x7C00 | (mantissa ? 0x200 : 0);
  const int e = biased - 127 + 15;
  if (e >= 31) return sign | 0x7C00;
  if (e <= 0) return sign;
  return static_cast<uint16_t>(sign | (e << 10) | (mantissa >> 13));
}

// One side of a block stored as `dtype`: the float32 values themselves, or their 16-bit bits.
struct Stored {
  DType dtype;
  std::vector<uint16_t> bits;
  const float* floats;
  Stored(DType t, const std::vector<float>& v) : dtype(t), floats(v.data()) {
    for (float f : v) {
      uint32_t x;
      std::memcpy(&x, &f, 4);
      if (t == DType::Float16) bits.push_back(to_half(f));
      if (t == DType::BFloat16) bits.push_back(static_cast<uint16_t>(x >> 16));
    }
  }
  StoredValues values() const {
    return {dtype == DType::Float32 ? static_cast<const void*>(floats) : bits.data(), dtype};
  }
};

void expect_close(double want, double got, double rel, const std::string& what) {
  if (!std::isfinite(want)) {
    EXPECT_TRUE(std::isnan(want) ? std::isnan(got) : got == want) << what << ": " << got << " vs " << want;
    return;
  }
  EXPECT_NEAR(got, want, rel * std::fabs(want) + 1e-300) << what;
}

// The AVX2 kernels against the portable ones, on one CPU: the widened values and counts and
// extremes exactly, double sums to rounding, the sums the AVX2 kernels run in float and the
// ULP error (|m - g| in float there) to float precision, KL's sums to the float precision of
// its close blocks. Sides stored as float32, float16 and bfloat16, alike and mixed.
TEST(MetricKernels, Avx2MatchesPortable) {
  const Kernels* avx2 = avx2_kernels();
  if (!avx2) GTEST_SKIP() << "this CPU has no AVX2+FMA+F16C: only the portable kernels run here";
  const Kernels& portable = portable_kernels();
  const std::pair<DType, DType> storages[] = {{DType::Float32, DType::Float32},
                                              {DType::Float16, DType::Float16},
                                              {DType::BFloat16, DType::BFloat16},
                                              {DType::Float32, DType::Float16},
                                              {DType::BFloat16, DType::Float32}};
  for (const UlpRule rule : {UlpRule{true, 0x1p-23, 0x1p-149}, UlpRule{true, 0x1p-10, 0x1p-24}, UlpRule{false, 0, 0}}) {
    for (const Block& b : blocks()) {
      for (const auto& [g_dtype, m_dtype] : storages) {
        const Stored g_stored(g_dtype, b.g), m_stored(m_dtype, b.m);
        const std::string at =
            b.name + " step=" + std::to_string(rule.step) + " " + short_name(g_dtype) + "/" + short_name(m_dtype);
        BlockSums want, got;
        auto want_wide = std::make_unique<WideBlock>(), got_wide = std::make_unique<WideBlock>();
        portable.sum(g_stored.values(), m_stored.values(), b.g.size(), 1e-3, 1e-3, rule, *want_wide, want);
        avx2->sum(g_stored.values(), m_stored.values(), b.g.size(), 1e-3, 1e-3, rule, *got_wide, got);
        ASSERT_EQ(std::memcmp(want_wide->golden, got_wide->golden, b.g.size() * 4), 0) << at;
        ASSERT_EQ(std::memcmp(want_wide->mine, got_wide->mine, b.g.size() * 4), 0) << at;
        EXPECT_EQ(got.g_nan, want.g_nan) << at;
        EXPECT_EQ(got.g_inf, want.g_inf) << at;
        EXPECT_EQ(got.m_nan, want.m_nan) << at;
        EXPECT_EQ(got.m_inf, want.m_inf) << at;
        EXPECT_EQ(got.special_bad, want.special_bad) << at;
        EXPECT_EQ(got.allclose_bad, want.allclose_bad) << at;
        for (auto [w, g, what] : {std::tuple{want.g_max, got.g_max, "g_max"},
                                  {want.g_min, got.g_min, "g_min"},
                                  {want.m_max, got.m_max, "m_max"},
                                  {want.m_min, got.m_min, "m_min"},
                                  {want.d_max, got.d_max, "d_max"},
                                  {want.d_min, got.d_min, "d_min"},
                                  {want.max_rel, got.max_rel, "max_rel"},
                                  {want.max_abs, got.max_abs, "max_abs"},
                                  {want.max_diff, got.max_diff, "max_diff"}})
          EXPECT_EQ(g, w) << at << " " << what;
        for (auto [w, g, what] : {std::tuple{want.g_sum, got.g_sum, "g_sum"},
                                  {want.m_sum, got.m_sum, "m_sum"},
                                  {want.gg, got.gg, "gg"},
                                  {want.mm, got.mm, "mm"},
                                  {want.gm, got.gm, "gm"},
                                  {want.dd, got.dd, "dd"}})
          expect_close(w, g, 1e-12, at + " " + what);
        // float partial sums of eight positive terms per lane: within 7 * 2^-24
        expect_close(want.sum_rel, got.sum_rel, 0x1p-21, at + " sum_rel");
        expect_close(want.sum_abs, got.sum_abs, 0x1p-21, at + " sum_abs");
        if (want.g_nan + want.g_inf + want.m_nan + want.m_inf > 0) continue;  // no metric is reported then
        expect_close(want.max_ulp, got.max_ulp, 0x1p-23, at + " max_ulp");
        expect_close(want.sum_ulp, got.sum_ulp, 0x1p-21, at + " sum_ulp");
        if (want.max_diff < 1) {
          const KlSums kw = portable.kl_close(want_wide->golden, want_wide->mine, b.g.size(), want);
          const KlSums kg = avx2->kl_close(got_wide->golden, got_wide->mine, b.g.size(), got);
          expect_close(kw.sg, kg.sg, 1e-6, at + " kl sg");
          EXPECT_NEAR(kg.ta, kw.ta, 1e-6 * kw.sg) << at << " kl ta";
          // tb holds e^d - 1 - d: with mine = golden + 0.7 that is large while KL is 0
          expect_close(kw.tb, kg.tb, 1e-6, at + " kl tb");
          // and the block's own KL, which may be far smaller than tb
          const auto kl = [](const KlSums& k) { return std::log1p((k.ta + k.tb) / k.sg) - k.ta / k.sg; };
          EXPECT_NEAR(kl(kg), kl(kw), 1e-6 * std::fabs(kl(kw)) + 1e-12) << at << " kl";
        }
      }
    }
  }
}

}  // namespace
}  // namespace diagnose::compare
