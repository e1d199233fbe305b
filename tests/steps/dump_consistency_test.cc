// The consistency rule on small dumps written here: an op row that fails grossly while its call's
// final outputs pass (a suspected dump artifact), the same row when the outputs fail or carry
// a trace of its error (a real defect, masked or not: still a candidate), and the candidates an
// intervention run would confirm, in order.
#include "steps/judgement/dump_consistency.h"

#include <gtest/gtest.h>

#include "compare/match.h"
#include "steps/judgement/culprit_confirmation.h"
#include "tests/compare/test_files.h"

namespace diagnose {
namespace dump_consistency_test {

using testing::TempDir;

struct Record {
  int64_t step;
  std::string kind;  // op, final
  std::string op_key;
  std::vector<float> values;
  std::string graph_nodes = "";  // a JSON list, "" for none
};

// A dump: each record's tensor as a (2, 4) float32 file.
void write_dump(const std::string& dir, const std::vector<Record>& records) {
  std::vector<testing::F32Record> written;
  for (const Record& r : records)
    written.push_back({R"("kind": ")" + r.kind + R"(", "op_key": ")" + r.op_key + R"(", "step": )" +
                           std::to_string(r.step) +
                           (r.graph_nodes.empty() ? "" : R"(, "graph_nodes": )" + r.graph_nodes),
                       r.values});
  testing::write_f32_dump(dir, written);
}

compare::CompareResult compared(const std::string& golden, const std::string& target) {
  compare::CompareOptions options;
  options.golden_path = golden;
  options.my_path = target;
  options.tolerances = compare::Tolerances::defaults();
  return compare::run_compare(options);
}

const std::vector<float> kValue = {1, 2, 3, 4, 5, 6, 7, 8}, kOutput = {0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4};
// nothing like kValue: cosine about 0, relative distance above 1
const std::vector<float> kOther = {8, -7, 6, -5, 4, -3, 2, -1};
// kOutput off by 1e-3 of its scale: passes no float32 tolerance, relative distance 1e-3
const std::vector<float> kOutputOff = {0.5005, 1.001, 1.5015, 2.002, 2.5025, 3.003, 3.5035, 4.004};

struct Dumps {
  TempDir golden_ops, target_ops, golden_outputs, target_outputs;
};

// Call 1: buf1 fine, buf2 as given, the output as given; the golden's buf2 is kValue.
void write(Dumps& d, const std::vector<float>& buf2, const std::vector<float>& output) {
  write_dump(d.golden_ops.path(), {{0, "op", "buf1", kValue}, {0, "op", "buf2", kValue}, {0, "op", "buf3", kValue}});
  write_dump(d.target_ops.path(), {{0, "op", "buf1", kValue, R"(["g0.a"])"},
                                   {0, "op", "buf2", buf2, R"(["g0.b", "g0.c"])"},
                                   {0, "op", "buf3", buf2, R"(["g0.d"])"}});
  write_dump(d.golden_outputs.path(), {{0, "final", "output", kOutput}});
  write_dump(d.target_outputs.path(), {{0, "final", "output", output}});
}

std::vector<SuspectedArtifact> artifacts_of(Dumps& d) {
  return suspected_dump_artifacts(compared(d.golden_ops.path(), d.target_ops.path()),
                                  compared(d.golden_outputs.path(), d.target_outputs.path()));
}

TEST(DumpConsistency, AGrosslyWrongRowUnderOutputsThatMatchIsASuspectedArtifact) {
  Dumps d;
  write(d, kOther, kOutput);
  const std::vector<SuspectedArtifact> artifacts = artifacts_of(d);
  ASSERT_EQ(artifacts.size(), 2u);
  EXPECT_EQ(artifacts[0].op_key, "buf2");
  EXPECT_EQ(artifacts[1].op_key, "buf3");
  EXPECT_GT(artifacts[0].row_distance, 1);
  EXPECT_EQ(artifacts[0].outputs_distance, 0);
  EXPECT_NE(artifacts[0].reason().find("buf2 call 1: relative distance from eager 1.4, while every final output"),
            std::string::npos)
      << artifacts[0].reason();
  // nothing left to blame first: the candidates are the suspects, for the intervention to settle
  const std::vector<CulpritCandidate> candidates =
      culprit_candidates(compared(d.golden_ops.path(), d.target_ops.path()), "", artifacts);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_TRUE(candidates[0].suspected_artifact);
  EXPECT_EQ(candidates[0].graph_nodes, (std::vector<std::string>{"g0.b", "g0.c"}));
}

TEST(DumpConsistency, ARowIsNotSuspectedWhenTheOutputsFail) {
  Dumps d;
  write(d, kOther, kOther);
  EXPECT_TRUE(artifacts_of(d).empty());
}

TEST(DumpConsistency, AMaskedDefectWhoseTraceReachesTheOutputsStaysACandidate) {
  // outputs passing a loose tolerance 1e-3 away from eager: a row 1.4 away can have caused that
  Dumps d;
  write(d, kOther, kOutputOff);
  compare::CompareResult finals = compared(d.golden_outputs.path(), d.target_outputs.path());
  for (compare::RowGroup& group : finals.groups)
    for (compare::Row& row : group.rows) row.verdict = compare::Verdict::Pass;  // within a loose tolerance
  const compare::CompareResult ops = compared(d.golden_ops.path(), d.target_ops.path());
  EXPECT_TRUE(suspected_dump_artifacts(ops, finals).empty());
  const std::vector<CulpritCandidate> candidates = culprit_candidates(ops, "buf2", {});
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0].op, "buf2");
  EXPECT_EQ(candidates[1].op, "buf3");
  EXPECT_FALSE(candidates[0].suspected_artifact);
}

TEST(DumpConsistency, ASmallErrorIsNeverGross) {
  Dumps d;
  write(d, {1, 2, 3, 4, 5, 6, 7, 8.5}, kOutput);  // fails float32 tolerances, 3% off
  EXPECT_TRUE(artifacts_of(d).empty());
}

}  // namespace dump_consistency_test
}  // namespace diagnose
