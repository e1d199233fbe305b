// The node search of the subgraph_isolate step on simulated oracles: the candidates are FX
// nodes (`g<k>.<name>`, graph order), a trial runs some of them eagerly, and the model fails
// when every node of some culprit set is compiled. The bounds are bench/README.md's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "orchestrator/bisect/bisector.h"
#include "orchestrator/bisect/subgraph.h"
#include "orchestrator/bisect/trial_oracle.h"

using namespace diagnose::bisect;

namespace {

using NodeSet = std::set<std::string>;

// n nodes in two graphs, graph order.
std::vector<std::string> nodes(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "g%d.n%03d", i < n / 2 ? 0 : 1, i);
    ids.push_back(id);
  }
  return ids;
}

int log2_ceil(int n) { return static_cast<int>(std::ceil(std::log2(n))); }

// Fails when every node of some culprit set is compiled; with `flip_every` k > 0, every k-th
// trial reports the opposite (a flaky judgement, 1 in k).
struct NodeModel {
  std::vector<NodeSet> culprits;
  int flip_every = 0;
  int trials = 0;

  TrialOutcome run(const Config& eager) {
    ++trials;
    NodeSet eager_set(eager.begin(), eager.end());
    bool fails = std::any_of(culprits.begin(), culprits.end(), [&](const NodeSet& set) {
      return std::none_of(set.begin(), set.end(), [&](const std::string& node) { return eager_set.count(node); });
    });
    if (flip_every > 0 && trials % flip_every == 0) fails = !fails;
    TrialOutcome outcome;
    outcome.outcome = fails ? Outcome::Fail : Outcome::Pass;
    return outcome;
  }
};

Result search(const std::vector<std::string>& candidates, NodeModel& model, int slots = 1) {
  FunctionOracle oracle([&](const Config& eager) { return model.run(eager); });
  Options options;
  options.slots = slots;
  return bisect(candidates, oracle, options);
}

std::set<NodeSet> found(const Result& result) {
  std::set<NodeSet> sets;
  for (const CulpritSet& set : result.culprit_sets) sets.insert(NodeSet(set.rules.begin(), set.rules.end()));
  return sets;
}

class NodeSearch : public ::testing::TestWithParam<int> {};

TEST_P(NodeSearch, OneDefectiveNode) {
  std::vector<std::string> candidates = nodes(GetParam());
  for (size_t at : {size_t(0), candidates.size() / 3, candidates.size() - 1}) {
    NodeModel model{{{candidates[at]}}};
    Result result = search(candidates, model);
    EXPECT_EQ(result.conclusion, Conclusion::CulpritsFound) << result.summary;
    EXPECT_EQ(found(result), std::set<NodeSet>({{candidates[at]}}));
    EXPECT_EQ(result.confidence, Confidence::High);
    EXPECT_LE(result.new_trials, log2_ceil(GetParam()) + 11) << "node " << at;
    EXPECT_EQ(subgraph_span(candidates, result.culprit_sets.front().rules), std::vector<std::string>{candidates[at]});
  }
}

TEST_P(NodeSearch, TwoIndependentDefectiveNodes) {
  std::vector<std::string> candidates = nodes(GetParam());
  NodeModel model{{{candidates[1]}, {candidates[GetParam() - 2]}}};
  Result result = search(candidates, model);
  EXPECT_EQ(found(result), std::set<NodeSet>({{candidates[1]}, {candidates[GetParam() - 2]}})) << result.summary;
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_LE(result.new_trials, 2 * log2_ceil(GetParam()) + 16);
}

TEST_P(NodeSearch, APairThatFailsOnlyCompiledTogether) {
  // a mul feeding an add: each compiled alone (the other eager) is right
  std::vector<std::string> candidates = nodes(GetParam());
  size_t mul = GetParam() / 4;
  NodeModel model{{{candidates[mul], candidates[mul + 1]}}};
  Result result = search(candidates, model);
  EXPECT_EQ(found(result), std::set<NodeSet>({{candidates[mul], candidates[mul + 1]}})) << result.summary;
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_LE(result.new_trials, 2 * log2_ceil(GetParam()) + 19);
  EXPECT_EQ(subgraph_span(candidates, result.culprit_sets.front().rules),
            std::vector<std::string>({candidates[mul], candidates[mul + 1]}));
}

TEST_P(NodeSearch, ParallelSlotsFindTheSamePairInFewerRounds) {
  std::vector<std::string> candidates = nodes(GetParam());
  NodeModel one{{{candidates[3], candidates[4]}}}, four = one;
  Result serial = search(candidates, one, 1), parallel = search(candidates, four, 4);
  EXPECT_EQ(found(parallel), found(serial));
  EXPECT_LT(parallel.rounds, serial.rounds);
}

TEST_P(NodeSearch, AFlakyJudgementNeverGivesAWrongAnswerWithHighConfidence) {
  std::vector<std::string> candidates = nodes(GetParam());
  for (int k : {5, 7, 11}) {
    NodeModel model{{{candidates[2], candidates[3]}}, k};
    Result result = search(candidates, model);
    bool right = result.conclusion == Conclusion::CulpritsFound &&
                 found(result) == std::set<NodeSet>({{candidates[2], candidates[3]}});
    EXPECT_TRUE(right || result.confidence == Confidence::Low) << "1 in " << k << ": " << result.summary;
    EXPECT_LE(result.new_trials, Options{}.max_trials);
  }
}

INSTANTIATE_TEST_SUITE_P(Nodes, NodeSearch, ::testing::Values(8, 64, 512));

TEST(SubgraphSpan, IsTheNodeRangeOfTheCulpritsGraphByGraph) {
  std::vector<std::string> candidates = {"g0.a", "g0.b", "g0.c", "g0.d", "g1.a", "g1.b", "g1.c"};
  EXPECT_EQ(subgraph_span(candidates, {"g0.d", "g0.b"}), std::vector<std::string>({"g0.b", "g0.c", "g0.d"}));
  EXPECT_EQ(subgraph_span(candidates, {"g0.c", "g1.a", "g1.c"}),
            std::vector<std::string>({"g0.c", "g1.a", "g1.b", "g1.c"}));
  EXPECT_THROW(subgraph_span(candidates, {"g2.a"}), std::invalid_argument);
  EXPECT_EQ(graph_of("g12.mul_1"), "g12");
}

}  // namespace
