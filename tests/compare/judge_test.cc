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

TEST(Judge, AllcloseThenMetricRuleThenReferee) {
  const Tolerances t = Tolerances::defaults();
  const TolerancePreset& p = t.presets.at("bf16");
  EXPECT_TRUE(judge(p, clean(0, 0.5, 1), false, {}, {}).pass);
  EXPECT_EQ(judge(p, clean(0, 0.5, 1), false, {}, {}).rule, "bf16 allclose");
  EXPECT_TRUE(judge(p, clean(3, 0.9999, 0.001), false, {}, {}).pass);
  EXPECT_FALSE(judge(p, clean(3, 0.99, 0.1), false, {}, {}).pass);
  // Compiled closer to the fp64 referee than eager: not a defect.
  Judgement better = judge(p, clean(3, 0.99, 0.1), false, 0.02, 0.01);
  EXPECT_TRUE(better.pass);
  EXPECT_EQ(better.rule, "bf16 referee");
  EXPECT_FALSE(judge(p, clean(3, 0.99, 0.1), false, 0.01, 0.05).pass);
}

TEST(Judge, ExactPresetAndSpecialValues) {
  const Tolerances t = Tolerances::defaults();
  EXPECT_FALSE(judge(t.presets.at("exact"), clean(1, 1.0, 0.0), false, {}, {}).pass);
  PairMetrics nan_moved = clean(0, 0, 0);
  nan_moved.special_mismatches = 1;
  EXPECT_FALSE(judge(t.presets.at("fp32"), nan_moved, true, {}, {}).pass);
  // With NaNs on either side only the element-wise rule applies.
  EXPECT_FALSE(judge(t.presets.at("fp32"), clean(2, 1.0, 0.0), true, {}, {}).pass);
  PairMetrics empty;
  EXPECT_TRUE(judge(t.presets.at("fp32"), empty, false, {}, {}).pass);
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

}  // namespace
}  // namespace diagnose::compare
