// Ops whose outputs are uninitialised memory: recognised in every form a dump names them, and
// their output rows neither pass nor fail.
#include "compare/uninitialized_ops.h"

#include <limits>

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
  EXPECT_TRUE(is_uninitialized_op("aten.empty_like.default"));
  EXPECT_TRUE(is_uninitialized_op("aten.empty.memory_format"));
  EXPECT_TRUE(is_uninitialized_op("aten.new_empty_strided.out"));
  EXPECT_TRUE(is_uninitialized_op("prims.empty_strided.default"));
  EXPECT_TRUE(is_uninitialized_op("empty_like-aten.empty_like.default"));  // FX and compiled dumps
  EXPECT_TRUE(is_uninitialized_op("net.drop/aten.empty_like.default#3"));  // eager dumps
  EXPECT_TRUE(is_uninitialized_op("aten.empty_strided.default#0"));        // eager, root module
  EXPECT_FALSE(is_uninitialized_op("aten.empty_like"));                    // a packet is no operator
  EXPECT_FALSE(is_uninitialized_op("aten.zeros_like.default"));
  EXPECT_FALSE(is_uninitialized_op("aten.bernoulli_.float"));
  EXPECT_FALSE(is_uninitialized_op("empty_like-aten.add.Tensor"));  // a node named empty_like computing an add
  EXPECT_FALSE(is_uninitialized_op(""));
  EXPECT_FALSE(is_uninitialized_op("output.logits"));
}

CompareResult compare_dirs(const std::string& golden, const std::string& mine) {
  CompareOptions options;
  options.golden_path = golden;
  options.my_path = mine;
  options.tolerances = Tolerances::defaults();
  return run_compare(options);
}

// x -> empty_like(x) -> bernoulli_ writes it; the two sides' empty_like outputs hold different
// garbage (a NaN on one).
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
  line(1, "aten.bernoulli_.float", "output", "b");
  write_bytes(dir + "/manifest.jsonl", m + R"({"type": "end", "records": 3})"
                                           "\n");
}

TEST(UninitializedOps, OutputRowsAreNotJudgedAndMissNothing) {
  TempDir golden, mine;
  write_dump(golden.path(), 5);
  write_dump(mine.path(), std::numeric_limits<float>::quiet_NaN());
  const CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  ASSERT_EQ(r.groups.size(), 1u);
  ASSERT_EQ(r.groups[0].rows.size(), 3u);
  const Row& input = r.groups[0].rows[0];
  const Row& output = r.groups[0].rows[1];
  EXPECT_EQ(input.verdict, Verdict::Pass);  // what it was given is judged as any input
  EXPECT_EQ(output.verdict, Verdict::NotJudged);
  EXPECT_EQ(output.reasons, std::vector<std::string>{kUninitializedMemory});
  EXPECT_EQ(verdict_name(output.verdict), "not_judged");
  EXPECT_EQ(r.summary.rows, 3u);
  EXPECT_EQ(r.summary.compared, 2u);
  EXPECT_EQ(r.summary.failed, 0u);
  EXPECT_EQ(r.summary.not_comparable, 0u);
  EXPECT_EQ(r.summary.not_judged, 1u);
  EXPECT_TRUE(r.summary.divergences.empty());
  EXPECT_EQ(coverage_text(r.summary), "judged 2 of 3 rows; 1 not judged: uninitialised memory");
  EXPECT_EQ(exit_code_for(r), 0);
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
