#include "orchestrator/engine/distinct_findings.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

std::vector<std::string> finding_messages(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.message);
  return out;
}

TEST(DistinctFindings, RankAndCallVariantsOfOneFactBecomeOneLineThatListsThem) {
  const std::vector<Finding> findings = {
      {"final outputs: first failing output rank 0 call 2: output.logits", "output.logits"},
      {"first failing op rank 0 graph 1 call 1: cat_3 (rmse to float64 0.5, 9x eager's 0.05)", "cat_3"},
      {"error starts at op cat_3 (its inputs pass, an output fails)", "cat_3"},
      {"first failing op rank 1 graph 1 call 1: cat_3 (rmse to float64 0.5, 9x eager's 0.05)", "cat_3"},
      {"final outputs: first failing output rank 1 call 2: output.logits", "output.logits"},
      {"error starts at op cat_3 (its inputs pass, an output fails)", "cat_3"},
      {"12 record(s) of one side not matched", ""},
  };
  EXPECT_EQ(finding_messages(distinct_findings(findings, "cat_3")),
            (std::vector<std::string>{
                "first failing op (ranks 0, 1; graph 1; call 1): cat_3 (rmse to float64 0.5, 9x eager's 0.05); the "
                "error starts there (its inputs pass, an output fails)",
                "final outputs: first failing output (ranks 0, 1; call 2): output.logits",
                "12 record(s) of one side not matched",
            }));
}

TEST(DistinctFindings, TheFinalOutputsSayingWhatTheOpsSaidIsOneFact) {
  const std::vector<Finding> findings = {
      {"first failing state call 1: state.k (rmse to float64 0.14)", "state.k"},
      {"final outputs: first failing state call 1: state.k (rmse to float64 0.14)", "state.k"},
      {"final outputs: 3 record(s) of one side not matched", ""},
  };
  EXPECT_EQ(finding_messages(distinct_findings(findings, "state.k")),
            (std::vector<std::string>{"first failing state call 1: state.k (rmse to float64 0.14)",
                                      "final outputs: 3 record(s) of one side not matched"}));
}

TEST(DistinctFindings, AnErrorStartIsFoldedIntoAnOpsFirstFailureNeverAnOutputs) {
  const std::vector<Finding> findings = {
      {"final outputs: first failing output call 2: output.logits (rmse to float64 0.3)", "output.logits"},
      {"first failing op call 2: sdpa (rmse to float64 0.5)", "sdpa"},
      {"error starts at op sdpa (its inputs pass, an output fails)", "sdpa"},
  };
  EXPECT_EQ(finding_messages(distinct_findings(findings, "sdpa")),
            (std::vector<std::string>{
                "first failing op call 2: sdpa (rmse to float64 0.5); the error starts there (its inputs pass, an "
                "output fails)",
                "final outputs: first failing output call 2: output.logits (rmse to float64 0.3)"}));
}

TEST(DistinctFindings, AnErrorStartWhoseInputsWereNotDumpedIsFoldedWithWhatIsKnown) {
  const std::vector<Finding> findings = {
      {"first failing op call 1: addmm (rmse to float64 0.5)", "addmm"},
      {"error starts at op addmm (the first failing row; its inputs were not dumped, so not judged) (rmse to float64 "
       "0.5)",
       "addmm"},
  };
  EXPECT_EQ(finding_messages(distinct_findings(findings, "addmm")),
            (std::vector<std::string>{"first failing op call 1: addmm (rmse to float64 0.5); the error starts there "
                                      "(the first failing row; its inputs were not dumped, so not judged)"}));
}

TEST(DistinctFindings, DifferentNumbersAreDifferentFacts) {
  const std::vector<Finding> findings = {{"first failing op rank 0: add (rmse to float64 0.5)", "add"},
                                         {"first failing op rank 1: add (rmse to float64 0.7)", "add"},
                                         {"first failing op rank 1: mul", "mul"}};
  EXPECT_EQ(
      finding_messages(distinct_findings(findings, "")),
      (std::vector<std::string>{"first failing op rank 0: add (rmse to float64 0.5)",
                                "first failing op rank 1: add (rmse to float64 0.7)", "first failing op rank 1: mul"}));
}

TEST(DistinctFindings, TheCulpritsFindingsComeFirstInTheirOrder) {
  const std::vector<Finding> findings = {{"a", ""}, {"b", "GeluFusionPass"}, {"c", "x"}, {"d", "GeluFusionPass"}};
  EXPECT_EQ(finding_messages(distinct_findings(findings, "GeluFusionPass")),
            (std::vector<std::string>{"b", "d", "a", "c"}));
}

}  // namespace
}  // namespace diagnose
