#include "compare/judge.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/compare/test_files.h"

namespace diagnose::compare {
namespace {

PairMetrics clean(uint64_t violations, double cosine, double rel_l2) {
  PairMetrics m;
  m.elements = 10;
  m.allclose_violations = violations;
  m.cosine_unrounded = cosine;
  m.relative_euclidean_distance = rel_l2;
  return m;
}

TEST(Judge, PresetsChosenByDtype) {
  Tolerances t = Tolerances::defaults();
  EXPECT_EQ(t.for_dtype(DType::Float16).name, "fp16");
  EXPECT_EQ(t.for_dtype(DType::BFloat16).name, "bf16");
  EXPECT_EQ(t.for_dtype(DType::Float8E5M2).name, "fp8");
  EXPECT_EQ(t.for_dtype(DType::Int32).name, "exact");
  t.forced_preset = "fp16";
  EXPECT_EQ(t.for_dtype(DType::Float32).name, "fp16");
}

TEST(Judge, WithoutTruthAllcloseThenMetricRule) {
  const Tolerances t = Tolerances::defaults();
  const DType bf16 = DType::BFloat16;
  EXPECT_TRUE(judge(t, bf16, clean(0, 0.5, 1), {}, {}).pass);
  EXPECT_EQ(judge(t, bf16, clean(0, 0.5, 1), {}, {}).rule, "bf16 allclose");
  EXPECT_TRUE(judge(t, bf16, clean(3, 0.9999, 0.001), {}, {}).pass);
  EXPECT_FALSE(judge(t, bf16, clean(3, 0.99, 0.1), {}, {}).pass);
}

TruthErrors truth(double golden_rmse, double mine_rmse, double scale, DType precision = DType::Float32,
                  uint64_t elements = 4096) {
  return TruthErrors{golden_rmse, mine_rmse, scale, elements, precision};
}

TEST(Judge, TruthRatioDecidesWhateverAllcloseSays) {
  const Tolerances t = Tolerances::defaults();
  // More accurate than eager although far outside allclose: not a defect.
  Judgement better = judge(t, DType::BFloat16, clean(300, 0.99, 0.1), {}, truth(0.02, 0.01, 1, DType::BFloat16));
  EXPECT_TRUE(better.pass);
  EXPECT_EQ(better.rule, "bf16 truth ratio");
  ASSERT_TRUE(better.truth_bound);
  // 100x further from float64 than eager while inside allclose and the cosine rule: a defect.
  Judgement worse = judge(t, DType::Float32, clean(0, 1.0, 1e-6), {}, truth(1e-8, 1e-6, 1));
  EXPECT_FALSE(worse.pass);
  EXPECT_EQ(worse.rule, "fp32 truth ratio");
  // Within the multiplier of eager's own error.
  EXPECT_TRUE(judge(t, DType::Float32, clean(5, 0.9, 1), {}, truth(1e-7, 1.9e-7, 0)).pass);
  EXPECT_FALSE(judge(t, DType::Float32, clean(0, 1, 0), {}, truth(1e-7, 2.1e-7, 0)).pass);
}

TEST(Judge, TruthRatioExactAndNearZeroRows) {
  const Tolerances t = Tolerances::defaults();
  // Identical sides pass, even when both sit exactly on the truth.
  EXPECT_TRUE(judge(t, DType::Float32, clean(0, 1, 0), {}, truth(0, 0, 1)).pass);
  EXPECT_TRUE(judge(t, DType::Float32, clean(0, 1, 0), {}, truth(3e-8, 3e-8, 1)).pass);
  // Eager exact, the target one rounding off (u = 2^-24 at scale 1): ratio noise, not a defect.
  EXPECT_TRUE(judge(t, DType::Float32, clean(1, 1, 0), {}, truth(0, 5e-8, 1)).pass);
  EXPECT_FALSE(judge(t, DType::Float32, clean(1, 1, 0), {}, truth(0, 1e-6, 1)).pass);
  // Near-zero output of large operands (cancellation): the floor scales with the inputs.
  EXPECT_TRUE(judge(t, DType::Float32, clean(1, 0.5, 1), {}, truth(0, 4e-8, 1.0)).pass);
  EXPECT_FALSE(judge(t, DType::Float32, clean(1, 0.5, 1), {}, truth(0, 4e-8, 1e-6)).pass);
}

TEST(Judge, TruthRatioUsesThePrecisionTheValueWasComputedIn) {
  const Tolerances t = Tolerances::defaults();
  // A float32 intermediate of a bf16 model: eager exact, the target off by a bf16 rounding.
  const TruthErrors computed_in_bf16 = truth(0, 1e-3, 1, DType::BFloat16);
  EXPECT_TRUE(judge(t, DType::Float32, clean(50, 0.999, 0.01), {}, computed_in_bf16).pass);
  EXPECT_FALSE(judge(t, DType::Float32, clean(50, 0.999, 0.01), {}, truth(0, 1e-3, 1, DType::Float32)).pass);
  // bf16's multiplier is 3, and small tensors get at least 3 (same()).
  EXPECT_TRUE(judge(t, DType::BFloat16, clean(1, 1, 0), {}, truth(1e-2, 2.9e-2, 0, DType::BFloat16)).pass);
  EXPECT_TRUE(judge(t, DType::Float32, clean(1, 1, 0), {}, truth(1e-6, 2.9e-6, 0, DType::Float32, 999)).pass);
  EXPECT_FALSE(judge(t, DType::Float32, clean(1, 1, 0), {}, truth(1e-6, 2.9e-6, 0, DType::Float32, 1000)).pass);
}

// One element where the sides disagree on NaN/Inf, with the truth's value there.
PairMetrics disagreeing(ValueClass golden, ValueClass mine, std::optional<ValueClass> in_truth) {
  PairMetrics m = clean(0, 0, 0);
  m.special_mismatches = 1;
  m.non_finite.push_back({golden, mine, in_truth, 1, {0}});
  return m;
}

TEST(Judge, TruthRatioWithNanAndInf) {
  const Tolerances t = Tolerances::defaults();
  const auto finite = ValueClass::Finite, nan = ValueClass::NaN, inf = ValueClass::PlusInf;
  // The target produces NaN/Inf where eager and the truth are finite: a defect whatever the RMSE says.
  Judgement nan_in_target = judge(t, DType::Float32, disagreeing(finite, nan, finite), {false, true}, truth(1, 0, 1));
  EXPECT_FALSE(nan_in_target.pass);
  EXPECT_EQ(nan_in_target.rule, "fp32 truth ratio: nan/inf positions differ from the float64 truth");
  // The target finite where eager and the truth are NaN: a miscompiled NaN propagation.
  EXPECT_FALSE(judge(t, DType::Float32, disagreeing(nan, finite, nan), {true, false}, truth(0, 0, 1)).pass);
  // Eager overflowed where the target and the truth are finite: judged on the finite elements.
  EXPECT_TRUE(judge(t, DType::Float32, disagreeing(inf, finite, finite), {true, false}, truth(1e-7, 1e-7, 1)).pass);
  EXPECT_FALSE(judge(t, DType::Float32, disagreeing(inf, finite, finite), {true, false}, truth(1e-7, 1e-5, 1)).pass);
  // The same NaNs on both sides: the finite elements decide.
  EXPECT_TRUE(judge(t, DType::Float32, clean(0, 0, 0), {true, true}, truth(1e-7, 1e-7, 1)).pass);
  EXPECT_FALSE(judge(t, DType::Float32, clean(0, 0, 0), {true, true}, truth(1e-7, 1e-5, 1)).pass);
}

TEST(Judge, NonFiniteDisagreementsInWords) {
  const auto finite = ValueClass::Finite, nan = ValueClass::NaN;
  NonFiniteDisagreement d{nan, finite, std::nullopt, 2, {1, 4}};
  EXPECT_EQ(non_finite_text(d, 6, {2, 3}, 1),
            "golden NaN at 2 of 6 elements, target finite there (first at [0, 1], [1, 1])");
  d.truth = nan;
  EXPECT_EQ(non_finite_text(d, 6, {6}, 1),
            "golden NaN at 2 of 6 elements, target finite there, float64 truth NaN (first at [1], [4])");
  NonFiniteDisagreement overflow{ValueClass::PlusInf, finite, finite, 1, {0}};
  EXPECT_EQ(non_finite_text(overflow, 1, {}, 1),
            "golden +Inf at 1 of 1 elements, target finite there like the float64 truth (the golden is wrong there)");
  NonFiniteDisagreement sign{ValueClass::MinusInf, ValueClass::PlusInf, std::nullopt, 1, {3}};
  EXPECT_EQ(non_finite_text(sign, 8, {4}, 2), "golden -Inf at 1 of 8 elements, target +Inf there (first at [1])");
  NonFiniteDisagreement in_target{finite, nan, std::nullopt, 1, {2}};
  EXPECT_EQ(non_finite_text(in_target, 3, {3}, 1), "target NaN at 1 of 3 elements, golden finite there (first at [2])");
}

TEST(Judge, UserTolerancesAreAnAllcloseNothingOverrides) {
  Tolerances t = Tolerances::defaults();
  ASSERT_EQ(t.apply_override("fp32.atol=1e-5"), "");
  ASSERT_EQ(t.apply_override("fp32.rtol=1e-4"), "");
  // Fails allclose: neither the cosine rule nor a truth closer than eager's passes it.
  Judgement j = judge(t, DType::Float32, clean(3, 0.999999, 1e-5), {}, truth(1e-5, 1e-6, 1));
  EXPECT_FALSE(j.pass);
  EXPECT_EQ(j.rule, "fp32 allclose as set (atol 1e-05, rtol 0.0001)");
  // Passes allclose: passes, even 100x further from the truth.
  EXPECT_TRUE(judge(t, DType::Float32, clean(0, 1, 0), {}, truth(1e-8, 1e-6, 1)).pass);
  // Asking for the ratio rule as well lets a row closer to the truth pass.
  ASSERT_EQ(t.apply_override("fp32.referee_multiplier=2"), "");
  EXPECT_TRUE(judge(t, DType::Float32, clean(3, 0.999999, 1e-5), {}, truth(1e-5, 1e-6, 1)).pass);
  // Presets the user left alone keep the truth ratio rule.
  EXPECT_EQ(judge(t, DType::BFloat16, clean(0, 1, 0), {}, truth(1, 1, 1, DType::BFloat16)).rule, "bf16 truth ratio");
}

TEST(Judge, ExactPresetAndSpecialValues) {
  const Tolerances t = Tolerances::defaults();
  EXPECT_FALSE(judge(t, DType::Int32, clean(1, 1.0, 0.0), {}, {}).pass);
  PairMetrics nan_moved = clean(0, 0, 0);
  nan_moved.special_mismatches = 1;
  EXPECT_FALSE(judge(t, DType::Float32, nan_moved, {true, false}, {}).pass);
  // With NaNs on either side only the element-wise rule applies.
  EXPECT_FALSE(judge(t, DType::Float32, clean(2, 1.0, 0.0), {true, true}, {}).pass);
  PairMetrics empty;
  EXPECT_TRUE(judge(t, DType::Float32, empty, {}, {}).pass);
}

TEST(Judge, OverridesFromCommandLineAndFile) {
  Tolerances t = Tolerances::defaults();
  EXPECT_EQ(t.apply_override("fp16.rtol=0.01"), "");
  EXPECT_DOUBLE_EQ(t.presets.at("fp16").rtol, 0.01);
  EXPECT_NE(t.apply_override("fp99.rtol=1"), "");
  EXPECT_NE(t.apply_override("fp16.bogus=1"), "");
  EXPECT_NE(t.apply_override("fp16.rtol=abc"), "");
  EXPECT_NE(t.apply_override("fp16.rtol=-1"), "");
  EXPECT_NE(t.apply_override("rtol"), "");
  diagnose::testing::TempDir dir;
  diagnose::testing::write_bytes(dir / "tol.json", R"({"bf16": {"atol": 0.5, "min_cosine": 0.9}})");
  EXPECT_EQ(t.load_overrides(dir / "tol.json"), "");
  EXPECT_DOUBLE_EQ(t.presets.at("bf16").atol, 0.5);
  diagnose::testing::write_bytes(dir / "bad.json", R"({"bf16": {"atol": "x"}})");
  EXPECT_NE(t.load_overrides(dir / "bad.json"), "");
  diagnose::testing::write_bytes(dir / "garbage.json", "{not json");
  EXPECT_NE(t.load_overrides(dir / "garbage.json"), "");
  EXPECT_NE(t.load_overrides(dir / "missing.json"), "");
}

TEST(Judge, CommandLineOverrideIsParsedOnceIntoItsFields) {
  ToleranceOverride o;
  ASSERT_EQ(parse_tolerance_override("fp16.rtol=1e-2", &o), "");
  EXPECT_EQ(o.preset, "fp16");
  EXPECT_EQ(o.field, "rtol");
  EXPECT_DOUBLE_EQ(o.value, 0.01);
  EXPECT_EQ(o.assignment(), "fp16.rtol=1e-2");  // as written, for the command that reproduces it
  Tolerances t = Tolerances::defaults();
  EXPECT_EQ(t.apply(o), "");
  EXPECT_TRUE(t.presets.at("fp16").user_allclose);
  EXPECT_NE(parse_tolerance_override("fp99.rtol=1", &o).find("unknown tolerance preset 'fp99'"), std::string::npos);
  EXPECT_EQ(parse_tolerance_override("fp16.rtol=abc", &o), "tolerance value 'abc' is not a number");
  EXPECT_EQ(t.apply({"fp16", "bogus", 1, "1"}).find("unknown tolerance field 'bogus'"), 0u);
}

}  // namespace
}  // namespace diagnose::compare
