#include "compare/compare.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "compare/divergence.h"
#include "compare/manifest.h"
#include "compare/report.h"
#include "tests/compare/test_files.h"

namespace diagnose::compare {
namespace {

using testing::TempDir;
using testing::write_bytes;
using testing::write_manifest_records;
using testing::write_npy_f32;

CompareResult compare_dirs(const std::string& golden, const std::string& mine,
                           std::optional<std::string> referee = std::nullopt) {
  CompareOptions o;
  o.golden_path = golden;
  o.my_path = mine;
  o.referee_path = referee;
  o.tolerances = Tolerances::defaults();
  o.threads = 2;
  return run_compare(o);
}

const Row* find_row(const CompareResult& r, const std::string& op_key, Direction d, int index) {
  for (const auto& g : r.groups)
    for (const auto& row : g.rows)
      if (row.spec.op_key == op_key && row.spec.direction == d && row.spec.index == index) return &row;
  return nullptr;
}

// A chain a -> b -> c in TorchAir FX naming where b introduces the error and c inherits it.
void write_chain(const std::string& dir, float b_error) {
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> y = {2, 4, 6, 8}, z = {3, 5, 7, 9};
  y[1] += b_error;
  z[1] += b_error;
  write_npy_f32(dir + "/a-aten.mul.Tensor.INPUT.0.20240101000000000001.npy", x);
  write_npy_f32(dir + "/a-aten.mul.Tensor.OUTPUT.0.20240101000000000001.npy", x);
  write_npy_f32(dir + "/b-aten.add.Tensor.INPUT.0.20240101000000000002.npy", x);
  write_npy_f32(dir + "/b-aten.add.Tensor.OUTPUT.0.20240101000000000002.npy", y);
  write_npy_f32(dir + "/c-aten.add.Tensor.INPUT.0.20240101000000000003.npy", y);
  write_npy_f32(dir + "/c-aten.add.Tensor.OUTPUT.0.20240101000000000003.npy", z);
}

TEST(Compare, NpyDirectoriesFirstDivergenceAndSourceOp) {
  TempDir golden, mine;
  write_chain(golden.path(), 0);
  write_chain(mine.path(), 0.5f);
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  EXPECT_EQ(r.golden_kind, DumpKind::FxNpyDump);  // TorchAir FX file names, flat (oldest layout)
  EXPECT_EQ(r.summary.rows, 6u);
  EXPECT_EQ(r.summary.failed, 3u);  // b output, c input (inherited) and c output
  ASSERT_EQ(r.summary.divergences.size(), 1u);
  const Divergence& d = r.summary.divergences[0];
  EXPECT_EQ(d.first_failing_op, "b-aten.add.Tensor");
  EXPECT_EQ(d.source_ops, std::vector<std::string>{"b-aten.add.Tensor"});
  EXPECT_EQ(d.source_inputs, std::vector<SourceInputs>{SourceInputs::Passed});
  EXPECT_EQ(exit_code_for(r), 1);
}

TEST(Compare, ASourceSaysItsInputsPassOnlyWhereEachWasJudgedAPass) {
  RowGroup group;
  auto row = [&](const std::string& op, Direction direction, Verdict verdict) {
    Row& r = group.rows.emplace_back();
    r.spec.op_key = op;
    r.spec.direction = direction;
    r.verdict = verdict;
  };
  row("addmm", Direction::Output, Verdict::Fail);  // an Inductor buffer: outputs only
  row("add", Direction::Input, Verdict::Pass);
  row("add", Direction::Output, Verdict::Fail);
  row("mul", Direction::Input, Verdict::NotComparable);
  row("mul", Direction::Output, Verdict::Fail);
  const std::vector<Divergence> found = find_divergences({group});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].source_ops, (std::vector<std::string>{"addmm", "add", "mul"}));
  EXPECT_EQ(found[0].source_inputs,
            (std::vector<SourceInputs>{SourceInputs::NotDumped, SourceInputs::Passed, SourceInputs::NotAllJudged}));
  EXPECT_EQ(source_inputs_text(SourceInputs::Passed), "its inputs pass, an output fails");
  EXPECT_EQ(source_inputs_text(SourceInputs::NotDumped),
            "the first failing row; its inputs were not dumped, so not judged");
}

TEST(Compare, IdenticalDumpsPassAndExitZero) {
  TempDir golden, mine;
  write_chain(golden.path(), 0);
  write_chain(mine.path(), 0);
  CompareResult r = compare_dirs(golden.path(), mine.path());
  EXPECT_EQ(r.summary.failed, 0u);
  EXPECT_EQ(r.summary.passed, 6u);
  EXPECT_EQ(exit_code_for(r), 0);
}

TEST(Compare, UnreadableFilesBecomeRowsAndTheRestGoesOn) {
  TempDir golden, mine;
  write_npy_f32(golden / "x.npy", {1, 2});
  write_npy_f32(mine / "x.npy", {1, 2});
  write_npy_f32(golden / "y.npy", {1, 2});
  write_bytes(mine / "y.npy", "garbage");
  write_npy_f32(golden / "z.npy", {1, 2, 3});
  write_npy_f32(mine / "z.npy", {1, 2});
  write_npy_f32(golden / "t.npy", {1, 2, 3, 4, 5, 6}, "(2, 3)");
  write_npy_f32(mine / "t.npy", {1, 2, 3, 4, 5, 6}, "(3, 2)");
  write_npy_f32(mine / "only_mine.npy", {1});
  write_npy_f32(golden / "only_golden.npy", {1});
  std::filesystem::create_symlink("loop.npy", mine / "loop.npy");
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  EXPECT_EQ(find_row(r, "x", Direction::Output, 0)->verdict, Verdict::Pass);
  const Row* y = find_row(r, "y", Direction::Output, 0);
  EXPECT_EQ(y->verdict, Verdict::NotComparable);
  EXPECT_NE(y->reasons.at(0).find("mine: not an npy file"), std::string::npos);
  const Row* z = find_row(r, "z", Direction::Output, 0);
  EXPECT_EQ(z->reasons.at(0), "data shape doesn't match.");
  ASSERT_TRUE(z->golden_stats);
  EXPECT_DOUBLE_EQ(z->golden_stats->max, 3.0);
  const Row* t = find_row(r, "t", Direction::Output, 0);
  EXPECT_TRUE(t->shape_differs);
  EXPECT_EQ(t->verdict, Verdict::Pass);
  EXPECT_EQ(find_row(r, "only_mine", Direction::Output, 0)->verdict, Verdict::NotComparable);
  ASSERT_EQ(r.summary.unmatched.size(), 1u);
  EXPECT_EQ(r.summary.unmatched[0].first, "only_golden");
  EXPECT_EQ(exit_code_for(r), 0);
}

void write_manifest(const std::string& dir, const std::vector<float>& out, bool complete) {
  write_npy_f32(dir + "/tensors/0.npy", {1, 2, 3});
  write_npy_f32(dir + "/tensors/1.npy", out);
  std::string m =
      R"({"type": "header", "format": "diagnose-dump", "version": 1})"
      "\n"
      R"({"type": "tensor", "seq": 0, "op_key": "fc/aten.mm.default#0", "op": "aten.mm.default", "io": "input", "index": 0, "file": "tensors/0.npy", "dtype": "torch.float32", "shape": [3]})"
      "\n"
      R"({"type": "tensor", "seq": 1, "op_key": "fc/aten.mm.default#0", "op": "aten.mm.default", "io": "output", "index": 0, "file": "tensors/1.npy", "dtype": "torch.bfloat16", "shape": [3]})"
      "\n";
  m += complete ? R"({"type": "end", "records": 2})"
                  "\n"
                : R"({"type": "tensor", "seq": 2, "op_k)";
  write_bytes(dir + "/manifest.jsonl", m);
}

TEST(Compare, ManifestsUseDeclaredDtypeAndToleratePartialDumps) {
  TempDir golden, mine;
  write_manifest(golden.path(), {1, 2, 3}, true);
  write_manifest(mine.path(), {1, 2, 3.01f}, false);
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  EXPECT_EQ(r.my_kind, DumpKind::Manifest);
  const Row* out = find_row(r, "fc/aten.mm.default#0", Direction::Output, 0);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->judged_by, "bf16 allclose");  // declared bf16 although stored as float32
  EXPECT_EQ(out->verdict, Verdict::Pass);
  bool partial_warned = false;
  for (const auto& w : r.summary.warnings) partial_warned |= w.find("partial dump") != std::string::npos;
  EXPECT_TRUE(partial_warned);
}

// A golden FX-level dump with float64 truths (node a's input and output, node b fused into
// a's buffer) and a compiled target holding one buffer that computes a and b, named after b.
TEST(Compare, ManifestTruthsJudgeByIdentityAndUnmatchedSayWhy) {
  TempDir golden, mine;
  const std::vector<double> truth = {1.0, 2.0, 3.0};
  const std::vector<float> eager = {1.0f, 2.0f, 3.0000002f};  // one rounding off the truth
  write_npy_f32(golden.path() + "/tensors/a_in.npy", {1, 2, 3});
  write_npy_f32(golden.path() + "/tensors/b.npy", eager);
  write_bytes(golden.path() + "/tensors/b.truth.npy", testing::npy_bytes("<f8", "(3,)", truth.data(), 24));
  write_npy_f32(golden.path() + "/tensors/a.npy", eager);
  write_bytes(golden.path() + "/tensors/a.truth.npy", testing::npy_bytes("<f8", "(3,)", truth.data(), 24));
  write_manifest_records(
      golden.path(),
      {R"({"type": "tensor", "seq": 0, "op_key": "a-aten.mul.Tensor", "io": "input", "index": 0, "file": "tensors/a_in.npy", "dtype": "torch.float32", "shape": [3], "fx_nodes": ["a"], "graph": 0, "stats": {"l2": 3.7416573867739413}})",
       R"({"type": "tensor", "seq": 0, "op_key": "a-aten.mul.Tensor", "io": "output", "index": 0, "file": "tensors/a.npy", "truth_file": "tensors/a.truth.npy", "precision": "torch.float32", "dtype": "torch.float32", "shape": [3], "fx_nodes": ["a"], "graph": 0})",
       R"({"type": "tensor", "seq": 1, "op_key": "b-aten.add.Tensor", "io": "output", "index": 0, "file": "tensors/b.npy", "truth_file": "tensors/b.truth.npy", "precision": "torch.float32", "dtype": "torch.float32", "shape": [3], "fx_nodes": ["b"], "graph": 0})"},
      /*truth=*/true);
  write_npy_f32(mine.path() + "/tensors/buf0.npy", {1.0f, 2.0f, 3.0f});
  write_manifest_records(
      mine.path(),
      {R"({"type": "tensor", "seq": 0, "op_key": "b-aten.add.Tensor", "io": "output", "index": 0, "file": "tensors/buf0.npy", "dtype": "torch.float32", "shape": [3], "fx_nodes": ["a", "b"], "graph": 0, "sources": [{"node": "a", "module": "fc", "line": "model.py:3", "code": "y = x * 2"}, {"node": "b", "custom_op": "demo::add"}]})"});
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  const Row* b = find_row(r, "b-aten.add.Tensor", Direction::Output, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->verdict, Verdict::Pass);  // exact: closer to the truth than eager
  EXPECT_EQ(b->judged_by, "fp32 truth ratio");
  ASSERT_TRUE(b->referee_rmse_golden && b->referee_rmse_mine);
  EXPECT_GT(*b->referee_rmse_golden, 0);
  EXPECT_EQ(*b->referee_rmse_mine, 0);
  std::map<std::string, std::string> unmatched(r.summary.unmatched.begin(), r.summary.unmatched.end());
  EXPECT_EQ(unmatched["graph0/step0/a-aten.mul.Tensor.INPUT.0"], "an input; the target dump records outputs only");
  EXPECT_EQ(unmatched["graph0/step0/a-aten.mul.Tensor.OUTPUT.0"],
            "fused into another node's buffer; never materialised");
  EXPECT_EQ(r.summary.judged_by.at("fp32 truth ratio"), 1u);
  // the row carries what the buffer computes and where each node came from
  EXPECT_EQ(b->spec.fx_nodes, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(b->spec.sources.size(), 2u);
  EXPECT_EQ(b->spec.sources[0].module, "fc");
  EXPECT_EQ(b->spec.sources[0].line, "model.py:3");
  EXPECT_EQ(b->spec.sources[0].code, "y = x * 2");
  EXPECT_EQ(b->spec.sources[1].custom_op, "demo::add");
  EXPECT_FALSE(b->spec.final_output);
}

// The compact truth (truth_delta_file): the record's float32 value plus its float32 difference
// from the truth, added in float64, judges as the full float64 truth file does.
TEST(Compare, CompactTruthReadsAsValuePlusDifference) {
  TempDir golden, mine;
  const std::vector<float> eager = {1.0f, 2.0f, 3.0000002f};
  const std::vector<float> delta = {0.0f, 0.0f, static_cast<float>(3.0 - static_cast<double>(eager[2]))};
  write_npy_f32(golden.path() + "/tensors/b.npy", eager);
  write_npy_f32(golden.path() + "/tensors/b.truth_delta.npy", delta);
  write_manifest_records(
      golden.path(),
      {R"({"type": "tensor", "seq": 1, "op_key": "b-aten.add.Tensor", "io": "output", "index": 0, "file": "tensors/b.npy", "truth_delta_file": "tensors/b.truth_delta.npy", "precision": "torch.float32", "dtype": "torch.float32", "shape": [3], "graph": 0})"},
      /*truth=*/true);
  write_npy_f32(mine.path() + "/tensors/b.npy", {1.0f, 2.0f, 3.0f});
  write_manifest_records(
      mine.path(),
      {R"({"type": "tensor", "seq": 0, "op_key": "b-aten.add.Tensor", "io": "output", "index": 0, "file": "tensors/b.npy", "dtype": "torch.float32", "shape": [3], "graph": 0})"});
  const Manifest manifest = read_manifest(golden.path());
  ASSERT_EQ(manifest.records.size(), 1u);
  std::optional<TensorRef> truth = manifest_truth(manifest, manifest.records[0]);
  ASSERT_TRUE(truth && truth->ok()) << (truth ? truth->error : "no truth");
  std::string error;
  auto stream = TensorStream::open(*truth, &error);
  ASSERT_NE(stream, nullptr) << error;
  std::vector<double> values(3);
  ASSERT_EQ(stream->read(values.data(), 3, &error), 3) << error;
  EXPECT_EQ(values, (std::vector<double>{1.0, 2.0, 3.0}));  // 3.0000002f - 2^-22: exact

  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  const Row* b = find_row(r, "b-aten.add.Tensor", Direction::Output, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->judged_by, "fp32 truth ratio");
  ASSERT_TRUE(b->referee_rmse_golden && b->referee_rmse_mine);
  EXPECT_GT(*b->referee_rmse_golden, 0);
  EXPECT_EQ(*b->referee_rmse_mine, 0);

  // a difference whose value cannot be read is no truth: the row says why, nothing crashes
  std::filesystem::remove(golden.path() + "/tensors/b.npy");
  truth = manifest_truth(manifest, manifest.records[0]);
  ASSERT_TRUE(truth.has_value());
  EXPECT_NE(truth->error.find("difference from the record's tensor"), std::string::npos) << truth->error;
}

// A file shared by records that view its elements at other shapes (the logits row [2, 3] and the
// final output that is its view [1, 2, 3]) is read at each record's shape, its truth too; a file
// of another element count, or column-major at another shape, is not comparable and says why.
TEST(Compare, ASharedFileIsReadAtEachRecordsShape) {
  TempDir golden, mine;
  const std::vector<float> value = {1, 2, 3, 4, 5, 6};
  write_npy_f32(golden.path() + "/tensors/row.npy", value, "(2, 3)");
  write_npy_f32(golden.path() + "/tensors/row.truth_delta.npy", {0, 0, 0, 0, 0, 0}, "(2, 3)");
  write_bytes(golden.path() + "/tensors/column_major.npy",
              testing::npy_bytes("<f4", "(3, 2)", value.data(), 24, /*fortran=*/true));
  const std::string files = R"("file": "tensors/row.npy", "truth_delta_file": "tensors/row.truth_delta.npy")";
  write_manifest_records(
      golden.path(),
      {R"({"type": "tensor", "seq": 0, "op_key": "mm", "io": "output", "index": 0, "dtype": "torch.float32", "shape": [2, 3], )" +
           files + "}",
       R"({"type": "tensor", "seq": 1, "kind": "final", "op_key": "output", "io": "output", "index": 0, "dtype": "torch.float32", "shape": [1, 2, 3], )" +
           files + "}",
       R"({"type": "tensor", "seq": 2, "op_key": "wrong_count", "io": "output", "index": 0, "dtype": "torch.float32", "shape": [4], "file": "tensors/row.npy"})",
       R"({"type": "tensor", "seq": 3, "op_key": "transposed", "io": "output", "index": 0, "dtype": "torch.float32", "shape": [2, 3], "file": "tensors/column_major.npy"})"},
      /*truth=*/true);
  const Manifest manifest = read_manifest(golden.path());
  ASSERT_EQ(manifest.records.size(), 4u);
  const TensorRef final_output = manifest_tensor(manifest, manifest.records[1]);
  ASSERT_TRUE(final_output.ok()) << final_output.error;
  EXPECT_EQ(final_output.shape, (Shape{1, 2, 3}));
  const std::optional<TensorRef> truth = manifest_truth(manifest, manifest.records[1]);
  ASSERT_TRUE(truth && truth->ok()) << (truth ? truth->error : "no truth");
  EXPECT_EQ(truth->shape, (Shape{1, 2, 3}));
  EXPECT_EQ(manifest_tensor(manifest, manifest.records[2]).error, "the record says shape [4], the file holds [2, 3]");
  EXPECT_NE(manifest_tensor(manifest, manifest.records[3]).error.find("column-major"), std::string::npos);

  write_npy_f32(mine.path() + "/tensors/mm.npy", value, "(2, 3)");
  write_npy_f32(mine.path() + "/tensors/out.npy", value, "(1, 2, 3)");
  write_manifest_records(
      mine.path(),
      {R"({"type": "tensor", "seq": 0, "op_key": "mm", "io": "output", "index": 0, "dtype": "torch.float32", "shape": [2, 3], "file": "tensors/mm.npy"})",
       R"({"type": "tensor", "seq": 1, "kind": "final", "op_key": "output", "io": "output", "index": 0, "dtype": "torch.float32", "shape": [1, 2, 3], "file": "tensors/out.npy"})"});
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  for (const char* op : {"mm", "output"}) {
    const Row* row = find_row(r, op, Direction::Output, 0);
    ASSERT_NE(row, nullptr) << op;
    EXPECT_EQ(row->verdict, Verdict::Pass) << op << ": " << (row->reasons.empty() ? "" : row->reasons.front());
  }
}

// Records the byte budget left without a tensor (not_kept: budget) are compared on their
// statistics, and the row says so; equal hashes are bitwise-equal tensors.
TEST(Compare, RecordsOverTheBudgetAreComparedOnStatistics) {
  TempDir golden, mine;
  for (const TempDir* side : {&golden, &mine}) {
    write_npy_f32(side->path() + "/tensors/a.npy", {1.0f, 2.0f});
    const std::string b_hash = side == &golden ? "ab" : "cd";
    write_bytes(
        side->path() + "/manifest.jsonl",
        R"({"type": "header", "format": "diagnose-dump", "version": 1})"
        "\n"
        R"({"type": "tensor", "seq": 0, "op_key": "a", "io": "output", "index": 0, "file": "tensors/a.npy", "dtype": "torch.float32", "shape": [2], "stats": {"min": 1.0, "max": 2.0, "mean": 1.5, "l2": 2.23606797749979, "nan": 0, "inf": 0, "hash": "aa"}})"
        "\n"
        R"({"type": "budget", "limit_bytes": 8, "written_bytes": 8})"
        "\n"
        R"({"type": "tensor", "seq": 1, "op_key": "b", "io": "output", "index": 0, "not_kept": "budget", "dtype": "torch.float32", "shape": [2], "stats": {"min": 1.0, "max": 2.0, "mean": 1.5, "l2": 2.23606797749979, "nan": 0, "inf": 0, "hash": ")" +
            b_hash +
            R"("}})"
            "\n"
            R"({"type": "tensor", "seq": 2, "op_key": "c", "io": "output", "index": 0, "not_kept": "budget", "dtype": "torch.float32", "shape": [2], "stats": {"min": 1.0, "max": 2.0, "mean": 1.5, "l2": 2.23606797749979, "nan": 0, "inf": 0, "hash": "ee"}})"
            "\n"
            R"({"type": "end", "records": 3})"
            "\n");
  }
  const Manifest manifest = read_manifest(golden.path());
  ASSERT_EQ(manifest.records.size(), 3u);
  EXPECT_EQ(manifest.budget_limit, 8);
  EXPECT_EQ(manifest.records[1].not_kept, "budget");
  EXPECT_NE(manifest_tensor(manifest, manifest.records[1]).error.find("byte budget (8 bytes) was reached"),
            std::string::npos);
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  const Row* a = find_row(r, "a", Direction::Output, 0);
  const Row* b = find_row(r, "b", Direction::Output, 0);
  const Row* c = find_row(r, "c", Direction::Output, 0);
  ASSERT_TRUE(a && b && c);
  EXPECT_FALSE(a->spec.over_budget);
  EXPECT_TRUE(b->spec.over_budget && c->spec.over_budget);
  EXPECT_NE(b->judged_by.find("statistics"), std::string::npos) << b->judged_by;
  EXPECT_EQ(c->judged_by.find("equal hash") != std::string::npos, true) << c->judged_by;
  // b passed on statistics within the tolerance, no element-wise test; c's equal hashes are one
  EXPECT_TRUE(b->verdict == Verdict::Pass && b->passed_on_statistics);
  EXPECT_TRUE(c->verdict == Verdict::Pass && !c->passed_on_statistics);
  EXPECT_FALSE(a->passed_on_statistics);
}

// Final outputs (`kind: final`): each with its path in the return value, or none (a dump
// written before paths), and its position among the flattened leaves.
struct FinalOutput {
  std::optional<std::string> path;
  int index;
  std::vector<float> values;
};

void write_finals(const std::string& dir, const std::vector<FinalOutput>& outputs) {
  std::vector<std::string> records;
  for (const FinalOutput& o : outputs) {
    const std::string file = "tensors/" + std::to_string(o.index) + ".npy";
    write_npy_f32(dir + "/" + file, o.values);
    records.push_back(R"({"type": "tensor", "seq": 0, "kind": "final", "op_key": "output", "io": "output", "index": )" +
                      std::to_string(o.index) + (o.path ? R"(, "path": ")" + *o.path + "\"" : "") + R"(, "file": ")" +
                      file + R"(", "dtype": "torch.float32", "shape": [)" + std::to_string(o.values.size()) + "]}");
  }
  write_manifest_records(dir, records);
}

TEST(Compare, FinalOutputsPairByPathAndByPositionWithDumpsBeforePaths) {
  TempDir golden, mine, before_paths;
  write_finals(golden.path(), {{"logits", 0, {1, 2, 3}},
                               {"past_key_values.layers.0.keys", 1, {4, 5}},
                               {"past_key_values.layers.0.values", 2, {6, 7}}});
  // another order and other positions: the paths pair them; the values differ
  write_finals(mine.path(), {{"past_key_values.layers.0.values", 0, {6, 9}},
                             {"past_key_values.layers.0.keys", 1, {4, 5}},
                             {"logits", 2, {1, 2, 3}}});
  CompareResult r = compare_dirs(golden.path(), mine.path());
  ASSERT_EQ(r.fatal_error, "");
  EXPECT_TRUE(r.summary.unmatched.empty());
  const Row* logits = find_row(r, "output.logits", Direction::Output, 2);
  const Row* keys = find_row(r, "output.past_key_values.layers.0.keys", Direction::Output, 1);
  const Row* values = find_row(r, "output.past_key_values.layers.0.values", Direction::Output, 0);
  ASSERT_TRUE(logits && keys && values);
  EXPECT_EQ(logits->verdict, Verdict::Pass);
  EXPECT_EQ(keys->verdict, Verdict::Pass);
  EXPECT_EQ(values->verdict, Verdict::Fail);
  EXPECT_TRUE(logits->spec.final_output);
  ASSERT_EQ(r.summary.divergences.size(), 1u);
  EXPECT_EQ(r.summary.divergences[0].first_failing_op, "output.past_key_values.layers.0.values");

  // a dump without paths pairs by position, either way round
  write_finals(before_paths.path(), {{std::nullopt, 0, {1, 2, 3}}});
  r = compare_dirs(before_paths.path(), golden.path());
  const Row* by_position = find_row(r, "output.logits", Direction::Output, 0);
  ASSERT_NE(by_position, nullptr);
  EXPECT_EQ(by_position->verdict, Verdict::Pass);
  EXPECT_EQ(r.summary.unmatched.size(), 0u);
  EXPECT_EQ(r.summary.rows, 3u);  // the two cache tensors have no golden
  r = compare_dirs(golden.path(), before_paths.path());
  ASSERT_NE(find_row(r, "output", Direction::Output, 0), nullptr);
  EXPECT_EQ(find_row(r, "output", Direction::Output, 0)->verdict, Verdict::Pass);
  EXPECT_EQ(r.summary.unmatched.size(), 2u);
}

void write_stats_manifest(const std::string& dir, double l2, const std::string& hash) {
  write_manifest_records(
      dir,
      {R"({"type": "tensor", "seq": 0, "op_key": "mm", "io": "output", "index": 0, "dtype": "torch.float16", "shape": [4], "stats": {"min": -1.0, "max": 2.0, "mean": 0.5, "l2": )" +
       std::to_string(l2) + R"(, "nan": 0, "inf": 0, "hash": ")" + hash + R"("}})"});
}

TEST(Compare, StatisticsOnlyDumpsAreJudgedOnTheirStatistics) {
  TempDir golden, same, close, far;
  write_stats_manifest(golden.path(), 3.0, "aa");
  write_stats_manifest(same.path(), 3.5, "aa");
  write_stats_manifest(close.path(), 3.001, "bb");
  write_stats_manifest(far.path(), 3.5, "cc");
  const auto row = [&](const TempDir& mine) {
    return compare_dirs(golden.path(), mine.path()).groups.at(0).rows.at(0);
  };
  Row r = row(same);
  EXPECT_EQ(r.verdict, Verdict::Pass);
  EXPECT_EQ(r.judged_by, "fp16 statistics (equal hash)");
  EXPECT_EQ(row(close).verdict, Verdict::Pass);
  Row f = row(far);
  EXPECT_EQ(f.verdict, Verdict::Fail);
  EXPECT_EQ(f.judged_by, "fp16 statistics");
  ASSERT_TRUE(f.golden_stats);
  EXPECT_DOUBLE_EQ(f.golden_stats->max, 2.0);
}

TEST(Compare, RefereeKeepsMoreAccurateTargetFromFailing) {
  TempDir golden, mine, referee;
  std::vector<float> truth(64), eager(64), compiled(64);
  for (int i = 0; i < 64; ++i) {
    truth[i] = 1.0f + i;
    eager[i] = truth[i] + (i % 2 ? 0.05f : -0.05f);
    compiled[i] = truth[i] + (i % 2 ? 0.01f : -0.01f);
  }
  write_npy_f32(golden / "out.npy", eager);
  write_npy_f32(mine / "out.npy", compiled);
  std::vector<double> truth64(truth.begin(), truth.end());
  write_bytes(referee / "out.npy", testing::npy_bytes("<f8", "(64,)", truth64.data(), 64 * 8));
  EXPECT_EQ(compare_dirs(golden.path(), mine.path()).summary.failed, 1u);
  CompareResult r = compare_dirs(golden.path(), mine.path(), referee.path());
  EXPECT_EQ(r.summary.failed, 0u);
  EXPECT_EQ(r.groups.at(0).rows.at(0).judged_by, "fp32 truth ratio");
}

// One row judged: out.npy of each side, and its float64 truth when given.
Row judge_one(const std::vector<float>& golden, const std::vector<float>& mine, const std::vector<double>& truth = {},
              const std::string& shape = "") {
  TempDir g, m, r;
  write_npy_f32(g / "out.npy", golden, shape);
  write_npy_f32(m / "out.npy", mine, shape);
  const std::string npy_shape = shape.empty() ? "(" + std::to_string(truth.size()) + ",)" : shape;
  if (!truth.empty()) write_bytes(r / "out.npy", testing::npy_bytes("<f8", npy_shape, truth.data(), truth.size() * 8));
  CompareResult result = compare_dirs(g.path(), m.path(), truth.empty() ? std::nullopt : std::optional(r.path()));
  return result.groups.at(0).rows.at(0);
}

std::string reasons_of(const Row& row) {
  std::string text;
  for (const std::string& reason : row.reasons) text += reason + "\n";
  return text;
}

TEST(Compare, NonFiniteValuesAreJudgedByPosition) {
  const float nan = NAN, inf = INFINITY;
  const Row lost_nan = judge_one({nan, 1, 2}, {0, 1, 2});
  EXPECT_EQ(lost_nan.verdict, Verdict::Fail);
  EXPECT_EQ(lost_nan.judged_by, "fp32 nan/inf positions differ");
  EXPECT_EQ(lost_nan.non_finite, "golden NaN at 1 of 3 elements, target finite there (first at [0])");
  EXPECT_NE(reasons_of(lost_nan).find(lost_nan.non_finite), std::string::npos);
  const Row new_nan = judge_one({0, 1, 2, 3}, {0, 1, 2, nan}, {}, "(2, 2)");
  EXPECT_EQ(new_nan.verdict, Verdict::Fail);
  EXPECT_EQ(new_nan.non_finite, "target NaN at 1 of 4 elements, golden finite there (first at [1, 1])");
  const Row sign = judge_one({inf, 1, 2}, {-inf, 1, 2});
  EXPECT_EQ(sign.verdict, Verdict::Fail);
  EXPECT_EQ(sign.non_finite, "golden +Inf at 1 of 3 elements, target -Inf there (first at [0])");
  // The same NaN and Inf on both sides are left out; the finite rest is judged by the usual rule.
  EXPECT_EQ(judge_one({nan, 1, inf}, {nan, 1, inf}).verdict, Verdict::Pass);
  const Row rest = judge_one({nan, 1, 2}, {nan, 1, 2.5f});
  EXPECT_EQ(rest.verdict, Verdict::Fail);
  EXPECT_EQ(rest.judged_by, "fp32 allclose");
  EXPECT_EQ(rest.non_finite, "");
}

TEST(Compare, TheFloat64TruthDecidesWhichSideHoldsTheRightNonFiniteValue) {
  const float nan = NAN, inf = INFINITY;
  const double nan64 = NAN;
  // Eager and float64 give NaN, the target a finite value: a miscompiled NaN propagation.
  const Row lost_nan = judge_one({nan, 1, 2}, {0, 1, 2}, {nan64, 1, 2});
  EXPECT_EQ(lost_nan.verdict, Verdict::Fail);
  EXPECT_EQ(lost_nan.judged_by, "fp32 truth ratio: nan/inf positions differ from the float64 truth");
  EXPECT_EQ(lost_nan.non_finite,
            "golden NaN at 1 of 3 elements, target finite there, float64 truth NaN (first at [0])");
  // A target that avoids eager's spurious overflow is not wrong; the finite rest still decides.
  const Row overflow = judge_one({inf, 1, 2}, {1e5f, 1, 2}, {1e5, 1, 2});
  EXPECT_EQ(overflow.verdict, Verdict::Pass);
  EXPECT_EQ(overflow.non_finite, "");
  EXPECT_NE(reasons_of(overflow).find("golden +Inf at 1 of 3 elements, target finite there like the float64 truth"),
            std::string::npos);
  EXPECT_EQ(judge_one({inf, 1, 2}, {1e5f, 1, 3}, {1e5, 1, 2}).verdict, Verdict::Fail);
  // A target that overflows where eager and the truth are finite is wrong.
  const Row new_inf = judge_one({1e5f, 1, 2}, {inf, 1, 2}, {1e5, 1, 2});
  EXPECT_EQ(new_inf.verdict, Verdict::Fail);
  EXPECT_EQ(new_inf.non_finite,
            "target +Inf at 1 of 3 elements, golden finite there, float64 truth finite (first at [0])");
}

TEST(Compare, LargeTensorsSplitAcrossThreadsGiveSameMetrics) {
  TempDir golden, mine;
  std::vector<float> g(3'000'000), m(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = static_cast<float>(std::sin(i * 0.001));
    m[i] = g[i] + static_cast<float>(1e-3 * std::cos(i * 0.37));
  }
  write_npy_f32(golden / "big.npy", g);
  write_npy_f32(mine / "big.npy", m);
  CompareOptions o;
  o.golden_path = golden / "big.npy";
  o.my_path = mine / "big.npy";
  o.tolerances = Tolerances::defaults();
  o.threads = 1;
  CompareResult one = run_compare(o);
  o.threads = 2;
  CompareResult two = run_compare(o);
  ASSERT_EQ(one.fatal_error, "");
  const PairMetrics& a = *one.groups[0].rows[0].metrics;
  const PairMetrics& b = *two.groups[0].rows[0].metrics;
  EXPECT_NEAR(a.cosine_unrounded, b.cosine_unrounded, 1e-12);
  EXPECT_NEAR(a.kl_divergence, b.kl_divergence, 1e-12);
  EXPECT_EQ(a.max_absolute_error, b.max_absolute_error);
  EXPECT_EQ(a.elements, 3'000'000u);
}

TEST(Compare, CsvAndJsonAreWrittenWithoutOverwriting) {
  TempDir golden, mine, out;
  write_chain(golden.path(), 0);
  write_chain(mine.path(), 0.5f);
  CompareOptions o;
  o.golden_path = golden.path();
  o.my_path = mine.path();
  o.tolerances = Tolerances::defaults();
  CompareResult r = run_compare(o);
  auto first = write_csv_reports(r, out.path());
  auto second = write_csv_reports(r, out.path());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_NE(first[0], second[0]);
  std::ifstream in(first[0]);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("token_id,data_id,golden_data_path,golden_op_type,golden_dtype,golden_shape,", 0), 0u);
  nlohmann::json j = result_to_json(r, o, first);
  EXPECT_EQ(j["format"], "diagnose-compare-result");
  EXPECT_EQ(j["summary"]["failed"], r.summary.failed);
  EXPECT_EQ(j["groups"][0]["rows"].size(), 6u);
  EXPECT_EQ(j["exit_code"], 1);
}

TEST(Compare, UnknownPathsAreFatalWithExitThree) {
  TempDir empty;
  CompareResult r = compare_dirs(empty / "nope", empty.path());
  EXPECT_NE(r.fatal_error, "");
  EXPECT_EQ(exit_code_for(r), 3);
}

}  // namespace
}  // namespace diagnose::compare
