#include "steps/judgement/cross_rank.h"

#include <gtest/gtest.h>

#include "tests/compare/test_files.h"

namespace diagnose {
namespace {

using testing::TempDir;

compare::Divergence divergence(int rank, int graph, const std::string& first, std::vector<std::string> sources) {
  compare::Divergence d;
  d.rank = rank;
  d.graph = graph;
  d.first_failing_op = first;
  d.source_inputs.assign(sources.size(), compare::SourceInputs::Passed);
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
  divergences[0].source_inputs = {compare::SourceInputs::NotDumped};  // an outputs-only dump claims nothing
  EXPECT_EQ(departing_rank(divergences)->text(), std::string("rank 1 departs first, at ") + kGelu +
                                                     "; rank 0 receives its error through the collective " + kWait +
                                                     " (the first failing row; its inputs were not dumped, so not "
                                                     "judged)");
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

// A rank dump of three ops in execution order: a shard (its values differ across ranks by design),
// the all_reduce's output and a replicated activation computed from it, each four floats.
struct RankValues {
  std::vector<float> shard, reduced, replicated;
};

void write_rank(const std::string& dir, const RankValues& values) {
  std::string manifest = R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                         "\n";
  int seq = 0;
  for (const auto& [op_key, data] : {std::pair<std::string, std::vector<float>>{"shard-aten.mm.default", values.shard},
                                     {"wait_tensor-_c10d_functional.wait_tensor.default", values.reduced},
                                     {"norm-aten.mul.Tensor", values.replicated}}) {
    const std::string file = "tensors/" + std::to_string(++seq) + ".npy";
    testing::write_npy_f32(dir + "/" + file, data);
    manifest += R"({"type": "tensor", "seq": )" + std::to_string(seq) + R"(, "op_key": ")" + op_key +
                R"(", "io": "output", "index": 0, "file": ")" + file +
                R"(", "dtype": "torch.float32", "shape": [4], "graph": 0})"
                "\n";
  }
  testing::write_bytes(dir + "/manifest.jsonl", manifest + R"({"type": "end", "records": 3})" + "\n");
}

void write_ranks(const std::string& dir, const std::vector<RankValues>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r) write_rank(dir + "/rank" + std::to_string(r), ranks[r]);
}

const std::vector<float> kReduced = {1, 2, 3, 4}, kReplicated = {0.5f, 1, 1.5f, 2};
RankValues rank_values(float shard, std::vector<float> replicated = kReplicated) {
  return {{shard, shard, shard, shard}, kReduced, std::move(replicated)};
}

compare::CompareOptions options_for(const std::string& golden, const std::string& target) {
  compare::CompareOptions options;
  options.golden_path = golden;
  options.my_path = target;
  options.tolerances = compare::Tolerances::defaults();
  options.threads = 1;
  return options;
}

TEST(CrossRank, RanksAgreeWhereTheGoldenRanksDoTheShardsAreNotCompared) {
  TempDir golden, target;
  write_ranks(golden.path(), {rank_values(1), rank_values(2)});
  // the shards differ across ranks in the target too, as in the golden; the rest is equal
  write_ranks(target.path(), {rank_values(1), rank_values(2)});
  const compare::CompareOptions options = options_for(golden.path(), target.path());
  std::optional<RankAgreement> agreement =
      compare_ranks(golden.path(), target.path(), options, compare::run_compare(options));
  ASSERT_TRUE(agreement);
  EXPECT_EQ(agreement->ranks, 2);
  EXPECT_EQ(agreement->compared, 2u);
  EXPECT_EQ(agreement->exact, 2u);
  EXPECT_EQ(agreement->differ, 0u);
  EXPECT_FALSE(agreement->first);
  EXPECT_EQ(agreement->text(),
            "ranks 0 and 1 agree on the 2 tensors that should be identical across them (2 equal element for element)");
  EXPECT_FALSE(departing_rank({}, agreement));
}

TEST(CrossRank, TheRankThatDiffersFromTheOthersAndFromItsGoldenSelfDeparts) {
  TempDir golden, target;
  write_ranks(golden.path(), {rank_values(1), rank_values(2)});
  write_ranks(target.path(), {rank_values(1), rank_values(2, {0.5f, 1, 1.5f, 2.5f})});
  const compare::CompareOptions options = options_for(golden.path(), target.path());
  std::optional<RankAgreement> agreement =
      compare_ranks(golden.path(), target.path(), options, compare::run_compare(options));
  ASSERT_TRUE(agreement && agreement->first);
  EXPECT_EQ(agreement->differ, 1u);
  EXPECT_EQ(agreement->first->rank, 1);
  EXPECT_EQ(agreement->first->reference, 0);
  EXPECT_EQ(agreement->first->op, "norm-aten.mul.Tensor");
  EXPECT_FALSE(agreement->first->final_output);
  EXPECT_EQ(agreement->first->why, "the only one of them that differs from its golden self there");
  EXPECT_NE(agreement->first->detail.find("output 0, max abs difference 0.5 (1 of 4 elements"), std::string::npos)
      << agreement->first->detail;
  EXPECT_EQ(agreement->to_json()["first"]["rank"], 1);
  // no rank fails on its own with another receiving it: the rank that departs from the others stands
  std::optional<RankDeparture> departure = departing_rank({divergence(1, 0, "norm-aten.mul.Tensor", {})}, agreement);
  ASSERT_TRUE(departure && departure->mismatch);
  EXPECT_EQ(departure->rank, 1);
  EXPECT_EQ(
      departure->text().rfind("rank 1 departs first, at norm-aten.mul.Tensor where it should agree with rank 0 (", 0),
      0u)
      << departure->text();
}

TEST(CrossRank, AmongThreeRanksTheOddOneOutDepartsFirstInExecutionOrder) {
  TempDir golden, target;
  write_ranks(golden.path(), {rank_values(1), rank_values(2), rank_values(3)});
  // rank 0's all_reduce output differs from ranks 1 and 2 (and so does the activation after it)
  RankValues odd = rank_values(1, {9, 9, 9, 9});
  odd.reduced = {1, 2, 3, 5};
  write_ranks(target.path(), {odd, rank_values(2), rank_values(3)});
  const compare::CompareOptions options = options_for(golden.path(), target.path());
  // judged without the golden selves: only the ranks' majority tells
  std::optional<RankAgreement> agreement = compare_ranks(golden.path(), target.path(), options, {});
  ASSERT_TRUE(agreement && agreement->first);
  EXPECT_EQ(agreement->ranks, 3);
  EXPECT_EQ(agreement->compared, 4u);
  EXPECT_EQ(agreement->differ, 4u);
  EXPECT_EQ(agreement->first->rank, 0);
  EXPECT_EQ(agreement->first->reference, 1);
  EXPECT_EQ(agreement->first->op, "wait_tensor-_c10d_functional.wait_tensor.default");
  EXPECT_EQ(agreement->first->why, "every other rank differs from it there");
  EXPECT_NE(agreement->text().find("ranks 0–2 disagree on 4 of 4 tensors"), std::string::npos) << agreement->text();
}

TEST(CrossRank, NoComparisonOfRanksForOneRankOrWhenTheStepComparesOneRank) {
  TempDir golden, target;
  write_rank(golden.path(), rank_values(1));
  write_rank(target.path(), rank_values(1));
  compare::CompareOptions options = options_for(golden.path(), target.path());
  EXPECT_FALSE(compare_ranks(golden.path(), target.path(), options, {}));
  TempDir golden_ranks, target_ranks;
  write_ranks(golden_ranks.path(), {rank_values(1), rank_values(2)});
  write_ranks(target_ranks.path(), {rank_values(1), rank_values(2)});
  options.rank = 1;
  EXPECT_FALSE(compare_ranks(golden_ranks.path(), target_ranks.path(), options, {}));
}

}  // namespace
}  // namespace diagnose
