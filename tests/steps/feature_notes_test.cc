// steps/plugin_runs/feature_notes.h: the features a run's status.json lists as unavailable become one
// note each in the step's summary and findings.
#include <gtest/gtest.h>

#include "steps/plugin_runs/feature_notes.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

using testing_support::TempDir;

RunRecord run_with_status(const TempDir& dir, const std::string& name, const std::string& status) {
  RunRecord run;
  run.dir = dir / name;
  testing_support::write_text(run.dir + "/status.json", status);
  return run;
}

const char* kOldTorch = R"json({"torch_version": "2.5.1", "features": {
  "compiled_dump": {"available": false, "reason": "WrapperCodeGen.generate_extern_kernel_out takes (self, kernel)",
                    "without": "final outputs only"},
  "output_tree": {"available": true}}})json";

TEST(FeatureNotes, UnavailableFeatureNotedOnceWithItsReason) {
  TempDir dir;
  std::vector<RunRecord> runs = {run_with_status(dir, "golden", kOldTorch), run_with_status(dir, "target", kOldTorch)};
  StepResult result;
  result.summary = "all pass";
  note_unavailable_features(runs, result);
  const std::string note =
      "torch 2.5.1: compiled_dump unavailable (WrapperCodeGen.generate_extern_kernel_out takes (self, kernel); "
      "final outputs only)";
  EXPECT_EQ(result.summary, "all pass; " + note);
  ASSERT_EQ(result.findings.size(), 1u);
  EXPECT_EQ(result.findings[0].message, note);
}

// fusion_bisect notes only inductor_rules: the trials' compiled dump is not its concern
TEST(FeatureNotes, OnlyTheNamedFeatures) {
  TempDir dir;
  std::vector<RunRecord> runs = {run_with_status(dir, "all_on", R"json({"torch_version": "2.5.1", "features": {
    "compiled_dump": {"available": false, "reason": "no PythonWrapperCodegen"},
    "inductor_rules": {"available": false, "reason": "no use_post_grad_passes", "without": "left out"}}})json")};
  StepResult result;
  result.summary = "culprits found";
  note_unavailable_features(runs, result, {"inductor_rules"});
  EXPECT_EQ(result.summary,
            "culprits found; torch 2.5.1: inductor_rules unavailable (no use_post_grad_passes; left out)");
  EXPECT_EQ(result.findings.size(), 1u);
}

TEST(FeatureNotes, NothingNotedWhenAvailableMissingOrMalformed) {
  TempDir dir;
  std::vector<RunRecord> runs = {
      run_with_status(dir, "ok", R"({"torch_version": "2.13.0", "features": {"compiled_dump": {"available": true}}})"),
      run_with_status(dir, "old", R"({"torch_version": "2.13.0"})"),
      run_with_status(dir, "bad", R"({"features": [1, 2]})"), run_with_status(dir, "garbage", "{not json"),
      run_with_status(dir, "entry", R"({"features": {"compiled_dump": 3}})")};
  RunRecord missing;
  missing.dir = dir / "missing";
  runs.push_back(missing);
  StepResult result;
  result.summary = "all pass";
  note_unavailable_features(runs, result);
  EXPECT_EQ(result.summary, "all pass");
  EXPECT_TRUE(result.findings.empty());
}

}  // namespace
}  // namespace diagnose
