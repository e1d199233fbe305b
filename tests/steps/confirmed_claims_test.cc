#include "steps/judgement/confirmed_claims.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

StepResult failed(const nlohmann::json& metrics) {
  StepResult result;
  result.status = StepStatus::Fail;
  result.summary = "the compiled graph diverges from eager";
  result.metrics = metrics;
  return result;
}

TEST(ConfirmedClaims, AStateWhoseForcedWritesDidNotFixTheFailureIsNoStateDefect) {
  StepResult result = failed({{"category", "state_defect"},
                              {"culprit", nullptr},
                              {"localized", false},
                              {"confirmation", {{"outcome", "rejected"}}}});
  const std::string summary = result.summary;
  claim_only_what_is_confirmed(result);
  EXPECT_EQ(result.metrics["category"], "unconfirmed_divergence");
  EXPECT_EQ(result.summary, summary) << "the confirmation's own summary says why";
}

TEST(ConfirmedClaims, AStateNoRunForcedIsACandidateNotACulprit) {
  StepResult result = failed({{"category", "state_defect"}, {"culprit", "state.buffers.k_cache"}});
  claim_only_what_is_confirmed(result);
  EXPECT_EQ(result.metrics["category"], "unconfirmed_divergence");
  EXPECT_EQ(result.metrics["culprit"], nullptr);
  EXPECT_NE(result.summary.find("no intervention run forced its writes"), std::string::npos) << result.summary;
}

TEST(ConfirmedClaims, AFailureNoOpRowLocalisesIsNoLocalisedOpDefect) {
  StepResult result = failed({{"localized", false}, {"first_failing_op", "output.logits"}});
  claim_only_what_is_confirmed(result);
  EXPECT_EQ(result.metrics["category"], "unconfirmed_divergence");
  EXPECT_NE(result.summary.find("no op row localises the failure"), std::string::npos) << result.summary;
}

TEST(ConfirmedClaims, AnOpNoInterventionCouldTakeOutIsACandidateNotACulprit) {
  StepResult result = failed({{"localized", true}, {"culprit", "add"}, {"first_failing_op", "add"}});
  claim_only_what_is_confirmed(result, "the dumps were given as paths");
  EXPECT_EQ(result.metrics["category"], "unconfirmed_divergence");
  EXPECT_EQ(result.metrics["culprit"], nullptr);
  EXPECT_EQ(result.metrics["localized"], false);
  EXPECT_EQ(result.metrics["first_failing_op"], "add") << "the first divergence is still reported";
  EXPECT_EQ(result.summary,
            "the compiled graph diverges from eager; the op rows point at `add`, an unconfirmed candidate, not a "
            "culprit: the dumps were given as paths: no run can take the op out to confirm it");
  StepResult state = failed({{"category", "state_defect"}, {"culprit", "state.buffers.k_cache"}});
  claim_only_what_is_confirmed(state, "the dumps were given as paths");
  EXPECT_EQ(state.metrics["category"], "unconfirmed_divergence");
  EXPECT_NE(state.summary.find("a candidate, not a culprit: the dumps were given as paths: no run can force its "
                               "writes to confirm it"),
            std::string::npos)
      << state.summary;
}

TEST(ConfirmedClaims, ConfirmedCulpritsAndPassesKeepTheirClaims) {
  StepResult state = failed({{"category", "state_defect"},
                             {"culprit", "state.buffers.k_cache"},
                             {"confirmation", {{"outcome", "confirmed"}}}});
  claim_only_what_is_confirmed(state);
  EXPECT_EQ(state.metrics["category"], "state_defect");
  StepResult op = failed({{"localized", true}, {"culprit", "mul"}, {"confirmation", {{"outcome", "confirmed"}}}});
  claim_only_what_is_confirmed(op);
  EXPECT_FALSE(op.metrics.contains("category"));
  StepResult passed = failed({{"localized", false}});
  passed.status = StepStatus::Pass;
  claim_only_what_is_confirmed(passed);
  EXPECT_FALSE(passed.metrics.contains("category"));
}

}  // namespace
}  // namespace diagnose
