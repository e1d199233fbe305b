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
