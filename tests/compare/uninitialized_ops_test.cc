// Ops whose outputs are uninitialised memory: recognised in every form a dump names them, and
// their output rows, and the inputs that read them, neither pass nor fail.
#include "compare/uninitialized_ops.h"

#include <limits>
#include <map>

#include <gtest/gtest.h>

#include "compare/compare.h"
#include "compare/report.h"
#include "tests/compare/test_files.h"

namespace diagnose::compare {
namespace {

using testing::TempDir;
using testing::write_bytes;
using testing::write_npy_f32;

TEST(UninitializedOps, EveryOverloadAndOpKeyForm) {
  for (const char* name : {"aten.empty_like.default", "aten.empty.memory_format", "aten.new_empty_strided.out",
                           "prims.empty_strided.default",
                           "empty_like-aten.empty_like.default",  // FX and compiled dumps
                           "net.drop/aten.empty_like.default#3",  // eager dumps
                           "aten.empty_strided.default#0"})       // eager, root module
    EXPECT_TRUE(is_uninitialized_op(name)) << name;
  for (const char* name : {"aten.empty_like",  // a packet is no operator
                           "aten.zeros_like.default", "aten.bernoulli_.float",
                           "empty_like-aten.add.Tensor",  // a node named empty_like computing an add
                           "", "output.logits"})
    EXPECT_FALSE(is_uninitialized_op(name)) << name;
}

CompareResult compare_dirs(const std::string& golden, const std::string& mine) {
  CompareOptions options;
  options.golden_path = golden;
  options.my_path = mine;
  options.tolerances = Tolerances::defaults();
  return run_compare(options);
}

// x -> empty_like(x) -> bernoulli_ reads and writes it; the two sides' empty_like outputs (and
// so bernoulli_'s input, the same file) hold different garbage (a NaN on one).
void write_dump(const std::string& dir, float garbage) {
  write_npy_f32(dir + "/tensors/x.npy", {1, 2, 3});
  write_npy_f32(dir + "/tensors/e.npy", {garbage, 7, -1e30f});
  write_npy_f32(dir + "/tensors/b.npy", {0, 1, 1});
  std::string m = R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                  "\n";
  const auto line = [&](int seq, const std::string& op, const std::string& io, const std::string& file) {
    m += R"({"type": "tensor", "seq": )" + std::to_string(seq) + R"(, "op_key": "drop/)" + op + R"(#0", "op": ")" + op +
         R"(", "io": ")" + io + R"(", "index": 0, "file": "tensors/)" + file +
         R"(.npy", "dtype": "torch.float32", "shape": [3]})"
         "\n";
  };
  line(0, "aten.empty_like.default", "input", "x");
  line(0, "aten.empty_like.default", "output", "e");
  line(1, "aten.bernoulli_.float", "input", "e");
  line(1, "aten.bernoulli_.float", "output", "b");
  write_bytes(dir + "/manifest.jsonl", m + R"({"type": "end", "records": 4})"
                                           "\n");
}

TEST(UninitializedOps, OutputRowsAreNotJudgedAndMissNothing) {
  TempDir golden, mine;
  write_dump(golden.path(), 5);
  write_dump(mine.path(), std::numeric_limits<float>::quiet_NaN());
  const CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  ASSERT_EQ(r.groups.size(), 1u);
  ASSERT_EQ(r.groups[0].rows.size(), 4u);
  const Row& input = r.groups[0].rows[0];
  const Row& output = r.groups[0].rows[1];
  const Row& consumer_input = r.groups[0].rows[2];
  const Row& consumer_output = r.groups[0].rows[3];
  EXPECT_EQ(input.verdict, Verdict::Pass);  // what it was given is judged as any input
  EXPECT_EQ(output.verdict, Verdict::NotJudged);
  EXPECT_EQ(output.reasons, std::vector<std::string>{kUninitializedMemory});
  EXPECT_EQ(verdict_name(output.verdict), "not_judged");
  EXPECT_EQ(consumer_input.spec.op_key, "drop/aten.bernoulli_.float#0");
  EXPECT_EQ(consumer_input.verdict, Verdict::NotJudged);  // the same garbage, read again
  EXPECT_EQ(consumer_input.reasons, std::vector<std::string>{kUninitializedMemory});
  EXPECT_EQ(consumer_output.verdict, Verdict::Pass);  // written whole: judged
  EXPECT_EQ(r.summary.rows, 4u);
  EXPECT_EQ(r.summary.compared, 2u);
  EXPECT_EQ(r.summary.failed, 0u);
  EXPECT_EQ(r.summary.not_comparable, 0u);
  EXPECT_EQ(r.summary.not_judged, 2u);
  EXPECT_TRUE(r.summary.divergences.empty());
  EXPECT_EQ(coverage_text(r.summary), "judged 2 of 4 rows; 2 not judged: uninitialised memory");
  EXPECT_EQ(exit_code_for(r), 0);
}

// Statistics-only dumps name no files: the content hash says which input is the empty buffer;
// an input of other contents, and one in another graph, are judged.
TEST(UninitializedOps, InputsKnownByHashInStatisticsOnlyDumps) {
  const auto write = [](const std::string& dir, int garbage_nans) {
    std::string m = R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                    "\n";
    const auto line = [&](int seq, int graph, const std::string& op, const std::string& io, int index,
                          const std::string& hash, int nans) {
      m += R"({"type": "tensor", "seq": )" + std::to_string(seq) + R"(, "graph": )" + std::to_string(graph) +
           R"(, "op_key": ")" + op + R"(#0", "op": ")" + op + R"(", "io": ")" + io + R"(", "index": )" +
           std::to_string(index) + R"(, "dtype": "torch.float32", "shape": [3], "not_kept": "stats_only", "stats": )" +
           R"({"min": 0, "max": 1, "mean": 0.5, "l2": 1, "nan": )" + std::to_string(nans) + R"(, "inf": 0, "hash": ")" +
           hash +
           R"("}})"
           "\n";
    };
    const std::string garbage = garbage_nans ? "nan" : "zero";
    line(0, 0, "aten.empty.memory_format", "output", 0, garbage, garbage_nans);
    line(1, 0, "aten.copy_.default", "input", 0, garbage, garbage_nans);
    line(1, 0, "aten.copy_.default", "input", 1, "x", 0);
    line(1, 0, "aten.copy_.default", "output", 0, "x", 0);
    line(2, 1, "aten.add.Tensor", "input", 0, garbage, garbage_nans);  // graph 1: no empty buffer there
    write_bytes(dir + "/manifest.jsonl", m);
  };
  TempDir golden, mine;
  write(golden.path(), 0);
  write(mine.path(), 1);
  const CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  std::map<std::string, Verdict> verdicts;
  for (const RowGroup& group : r.groups)
    for (const Row& row : group.rows)
      verdicts[std::to_string(row.spec.graph) + " " + row.spec.op_key + " " +
               (row.spec.direction == Direction::Input ? "in" : "out") + std::to_string(row.spec.index)] = row.verdict;
  EXPECT_EQ(verdicts, (std::map<std::string, Verdict>{{"0 aten.empty.memory_format#0 out0", Verdict::NotJudged},
                                                      {"0 aten.copy_.default#0 in0", Verdict::NotJudged},
                                                      {"0 aten.copy_.default#0 in1", Verdict::Pass},
                                                      {"0 aten.copy_.default#0 out0", Verdict::Pass},
                                                      {"1 aten.add.Tensor#0 in0", Verdict::Fail}}));
}

TEST(UninitializedOps, FxNpyFilesNamedAfterTheOp) {
  TempDir golden, mine;
  write_npy_f32(golden / "empty_like-aten.empty_like.default.OUTPUT.0.20240101000000000001.npy", {1, 2});
  write_npy_f32(mine / "empty_like-aten.empty_like.default.OUTPUT.0.20240101000000000001.npy", {9, -9});
  const CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  EXPECT_EQ(r.summary.not_judged, 1u);
  EXPECT_EQ(r.summary.failed, 0u);
}

}  // namespace
}  // namespace diagnose::compare
