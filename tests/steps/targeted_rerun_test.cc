#include "steps/plugin_runs/targeted_rerun.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

compare::Row row(const std::string& op_key, compare::Verdict verdict, bool over_budget, bool final_output = false) {
  compare::Row r;
  r.spec.op_key = op_key;
  r.spec.over_budget = over_budget;
  r.spec.final_output = final_output;
  r.verdict = verdict;
  return r;
}

TEST(TargetedRerun, TheRegionIsTheFailingOpsPastTheBudgetInExecutionOrder) {
  using compare::Verdict;
  compare::CompareResult compared;
  compared.groups.push_back({-1, -1, {row("output", Verdict::Fail, true, true)}});
  compared.groups.push_back(
      {-1,
       0,
       {row("kept-aten.mm.default", Verdict::Fail, false), row("passes-aten.add.Tensor", Verdict::Pass, true),
        row("mul-aten.mul.Tensor", Verdict::Fail, true), row("mul-aten.mul.Tensor", Verdict::Fail, true),
        row("add_1-aten.add.Tensor", Verdict::Fail, true), row("sum-aten.sum.default", Verdict::Fail, true)}});
  EXPECT_EQ(over_budget_region(compared),
            (std::vector<std::string>{"mul-aten.mul.Tensor", "add_1-aten.add.Tensor", "sum-aten.sum.default"}));
  EXPECT_EQ(over_budget_region(compared, 2),
            (std::vector<std::string>{"mul-aten.mul.Tensor", "add_1-aten.add.Tensor"}));
}

TEST(TargetedRerun, OpKeysArePatternsThatMatchOnlyThemselves) {
  EXPECT_EQ(exact_op_key_pattern("layers.0.fc1/aten.mm.default#0"), R"(^layers\.0\.fc1\/aten\.mm\.default\#0$)");
  EXPECT_EQ(exact_op_key_pattern("add_1-aten.add.Tensor"), R"(^add_1\-aten\.add\.Tensor$)");
  EXPECT_EQ(exact_op_key_pattern("buf0"), "^buf0$");
}

}  // namespace
}  // namespace diagnose
