#include "steps/cross_rank.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

compare::Divergence divergence(int rank, int graph, const std::string& first, std::vector<std::string> sources) {
  compare::Divergence d;
  d.rank = rank;
  d.graph = graph;
  d.first_failing_op = first;
  d.source_ops = std::move(sources);
  return d;
}

const char* kWait = "wait_tensor-_c10d_functional.wait_tensor.default";
const char* kGelu = "bias_gelu-diagnose_example.bias_gelu.default";

TEST(CrossRank, TheRankWhoseErrorStartsAtItsOwnOpDepartsTheOthersReceiveItThroughACollective) {
  std::vector<compare::Divergence> divergences = {divergence(0, 0, kWait, {kWait}), divergence(1, 0, kGelu, {kGelu}),
                                                  divergence(0, -1, "output", {"output"}),
                                                  divergence(1, -1, "output", {"output"})};
  std::optional<RankDeparture> departure = departing_rank(divergences);
  ASSERT_TRUE(departure);
  EXPECT_EQ(departure->rank, 1);
  EXPECT_EQ(departure->op, kGelu);
  EXPECT_EQ(departure->text(), std::string("rank 1 departs first, at ") + kGelu +
                                   "; rank 0 receives its error through the collective " + kWait +
                                   " (whose own inputs pass)");
  EXPECT_EQ(ranks_text(failing_ranks(divergences)), "0, 1");
}

TEST(CrossRank, NoSingleRankDepartsWhenTwoGoWrongOnTheirOwnOrOnlyOneFails) {
  EXPECT_FALSE(departing_rank({divergence(0, 0, kGelu, {kGelu}), divergence(1, 0, kGelu, {kGelu})}));
  EXPECT_FALSE(departing_rank({divergence(1, 0, kGelu, {kGelu})}));
  EXPECT_FALSE(departing_rank({divergence(-1, 0, kGelu, {kGelu})}));
  EXPECT_TRUE(failing_ranks({divergence(-1, 0, kGelu, {})}).empty());
}

TEST(CrossRank, CollectivesAreTorchDistributedsOps) {
  EXPECT_TRUE(collective_op(kWait));
  EXPECT_TRUE(collective_op("_c10d_functional.all_gather_into_tensor.default"));
  EXPECT_TRUE(collective_op("all_reduce-c10d.allreduce_.default"));
  EXPECT_FALSE(collective_op(kGelu));
  EXPECT_FALSE(collective_op("my_c10d.thing.default"));
}

}  // namespace
}  // namespace diagnose
