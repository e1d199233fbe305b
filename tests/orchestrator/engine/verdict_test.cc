#include "orchestrator/engine/verdict.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

StepResult step(const std::string& id, StepStatus status, const std::string& category,
                nlohmann::json metrics = nlohmann::json::object()) {
  StepResult s;
  s.id = id;
  s.status = status;
  s.category = category;
  s.summary = id + " summary";
  s.metrics = std::move(metrics);
  s.reproduce = {"repro " + id};
  return s;
}

Verdict verdict_of(std::vector<StepResult> steps, std::vector<std::string> order = {},
                   std::map<std::string, std::string> advice = {}) {
  State state;
  state.steps = std::move(steps);
  return compute_verdict(order, advice, state);
}

TEST(Verdict, NothingFailedMeansNoProblem) {
  Verdict v =
      verdict_of({step("a", StepStatus::Pass, "precision_problem"), step("b", StepStatus::Skipped, "fusion_defect")});
  EXPECT_EQ(v.category, "no_precision_problem");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.summary, "No precision problem found: 1 step(s) passed, 1 skipped");
}

TEST(Verdict, SaysWhichRowsWereJudgedOnStatisticsOnlyBecauseOfTheDumpBudget) {
  Verdict v = verdict_of({step("eager", StepStatus::Pass, "eager_device_defect", {{"statistics_only_over_budget", 0}}),
                          step("graph", StepStatus::Pass, "localized_op_defect", {{"statistics_only_over_budget", 12}}),
                          step("fusion", StepStatus::Skipped, "fusion_defect")});
  EXPECT_EQ(v.category, "no_precision_problem");
  EXPECT_EQ(v.summary,
            "No precision problem found: 2 step(s) passed, 1 skipped; rows judged on statistics only, the dump budget "
            "being reached (defaults.dump_budget): 12 in step 'graph'");
  Verdict failed = verdict_of({step("graph", StepStatus::Fail, "localized_op_defect",
                                    {{"first_failing_op", "add_1"}, {"statistics_only_over_budget", 3}})});
  EXPECT_EQ(failed.summary,
            "Defect localised to an op, not caused by fusion: add_1 (step 'graph': graph summary); rows judged on "
            "statistics only, the dump budget being reached (defaults.dump_budget): 3 in step 'graph'");
}

TEST(Verdict, FlowchartOrderDecidesBetweenFailures) {
  Verdict v = verdict_of({step("graph", StepStatus::Fail, "localized_op_defect", {{"first_failing_op", "add_1"}}),
                          step("eager", StepStatus::Fail, "eager_device_defect", {{"first_failing_op", "mm_0"}}),
                          step("bisect", StepStatus::Fail, "fusion_defect", {{"culprit", "SoftmaxFusionPass"}})});
  EXPECT_EQ(v.category, "eager_device_defect");
  EXPECT_EQ(v.step, "eager");
  EXPECT_EQ(v.culprit, "mm_0");
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_EQ(v.reproduce, std::vector<std::string>{"repro eager"});
  EXPECT_EQ(v.failed_steps, (std::vector<std::string>{"graph", "eager", "bisect"}));

  Verdict fusion = verdict_of({step("graph", StepStatus::Fail, "localized_op_defect", {{"first_failing_op", "add_1"}}),
                               step("bisect", StepStatus::Fail, "fusion_defect", {{"culprit", "SoftmaxFusionPass"}})});
  EXPECT_EQ(fusion.category, "fusion_defect");
  EXPECT_EQ(fusion.culprit, "SoftmaxFusionPass");
  EXPECT_EQ(fusion.summary, "Graph structure / fusion defect: SoftmaxFusionPass (step 'bisect': bisect summary)");
}

// graph_dump_compare whose intervention confirmed no candidate claims no localised defect and names no
// culprit; a later step that finds one (the subgraph search, a fusion rule) decides the verdict.
TEST(Verdict, AnUnconfirmedDivergenceNamesNoCulpritAndRanksBelowWhatALaterStepFinds) {
  const nlohmann::json rejected = {{"outcome", "rejected"}, {"candidate", "mm_71"}};
  StepResult graph = step("graph", StepStatus::Fail, "unconfirmed_divergence",
                          {{"culprit", nullptr}, {"first_failing_op", "mm_71"}, {"confirmation", rejected}});
  Verdict alone = verdict_of({graph, step("subgraph", StepStatus::Pass, "subgraph_defect")});
  EXPECT_EQ(alone.category, "unconfirmed_divergence");
  EXPECT_EQ(alone.culprit, "");
  EXPECT_EQ(alone.summary, "The compiled graph diverges; no culprit confirmed (step 'graph': graph summary)");
  EXPECT_EQ(alone.confirmation["outcome"], "rejected");
  Verdict subgraph = verdict_of({graph, step("subgraph", StepStatus::Fail, "subgraph_defect", {{"culprit", "g0.mm"}})});
  EXPECT_EQ(subgraph.category, "subgraph_defect");
  EXPECT_EQ(subgraph.culprit, "g0.mm");
  EXPECT_EQ(verdict_of({graph, step("other", StepStatus::Fail, "precision_problem")}).category,
            "unconfirmed_divergence");
}

TEST(Verdict, AMinimalSubgraphRanksAfterAFusionRuleAndBeforeTheLocalisedOp) {
  StepResult graph = step("graph", StepStatus::Fail, "localized_op_defect", {{"first_failing_op", "output"}});
  StepResult subgraph =
      step("subgraph", StepStatus::Fail, "subgraph_defect", {{"culprit", "operator.mul+operator.add"}});
  Verdict v = verdict_of({graph, subgraph});
  EXPECT_EQ(v.category, "subgraph_defect");
  EXPECT_EQ(v.culprit, "operator.mul+operator.add");
  EXPECT_EQ(verdict_of({graph, subgraph, step("bisect", StepStatus::Fail, "fusion_defect")}).category, "fusion_defect");
}

TEST(Verdict, CustomOrderAndAdvice) {
  Verdict v = verdict_of(
      {step("graph", StepStatus::Fail, "localized_op_defect"), step("eager", StepStatus::Fail, "eager_device_defect")},
      {"localized_op_defect"}, {{"localized_op_defect", "call the graph team"}});
  EXPECT_EQ(v.category, "localized_op_defect");
  EXPECT_EQ(v.advice, "call the graph team");
}

TEST(Verdict, ErrorsMakeItInconclusiveUnlessALaterRankedCheckErrored) {
  Verdict crashed = verdict_of({step("model", StepStatus::Error, "precision_problem")});
  EXPECT_EQ(crashed.category, "inconclusive");
  EXPECT_EQ(crashed.exit_code, 3);
  EXPECT_EQ(crashed.errored_steps, std::vector<std::string>{"model"});

  // The single-op check errored: a later localised failure may really be a single-op defect.
  Verdict open = verdict_of({step("single_op", StepStatus::Error, "single_op_graph_defect"),
                             step("graph", StepStatus::Fail, "localized_op_defect")});
  EXPECT_EQ(open.category, "inconclusive");
  EXPECT_EQ(open.summary,
            "Inconclusive: step 'single_op' errored: single_op summary; step 'graph' suggests "
            "localized_op_defect but an earlier check is missing");

  // A single-op defect found while a later step crashed is still a diagnosis.
  Verdict found = verdict_of({step("single_op", StepStatus::Fail, "single_op_graph_defect"),
                              step("graph", StepStatus::Error, "localized_op_defect")});
  EXPECT_EQ(found.category, "single_op_graph_defect");
  EXPECT_EQ(found.exit_code, 1);
  EXPECT_EQ(found.errored_steps, std::vector<std::string>{"graph"});

  Verdict unfinished = verdict_of(
      {step("a", StepStatus::Pass, "precision_problem"), step("b", StepStatus::Pending, "precision_problem")});
  EXPECT_EQ(unfinished.category, "inconclusive");
  EXPECT_EQ(unfinished.summary, "Inconclusive: step 'b' did not finish");
}

TEST(Verdict, EveryDiagnosableCategoryHasTitleAndAdvice) {
  size_t diagnosable = 0;
  for (const VerdictCategory& c : verdict_categories()) {
    EXPECT_FALSE(c.title.empty());
    EXPECT_FALSE(c.advice.empty());
    diagnosable += c.diagnosable;
  }
  EXPECT_EQ(diagnosable, 11u);
}

}  // namespace
}  // namespace diagnose
