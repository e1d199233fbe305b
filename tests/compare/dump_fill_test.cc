#include "compare/dump_fill.h"

#include <gtest/gtest.h>

#include "compare/manifest.h"
#include "tests/compare/test_files.h"

namespace diagnose::compare {
namespace {

using testing::TempDir;
using testing::write_bytes;
using testing::write_npy_f32;

const std::string kManifestHeader = R"({"type": "header", "format": "diagnose-dump", "version": 1})";
const std::string kEnd = R"({"type": "end", "records": 9})";

std::string record(const std::string& op_key, const std::string& io, int index, const std::string& hash,
                   const std::string& file_fields) {
  return R"({"type": "tensor", "seq": 1, "op_key": ")" + op_key + R"(", "io": ")" + io + R"(", "index": )" +
         std::to_string(index) + R"(, "dtype": "torch.float32", "shape": [2], )" + file_fields +
         R"("stats": {"min": 1, "max": 2, "mean": 1.5, "l2": 2.2, "nan": 0, "inf": 0, "hash": ")" + hash + R"("}})";
}

const std::string kOverBudget = R"("not_kept": "budget", )";

const ManifestRecord& find(const Manifest& manifest, const std::string& identity) {
  for (const ManifestRecord& r : manifest.records)
    if (r.identity() == identity) return r;
  throw std::runtime_error("no record " + identity);
}

// The first dump kept `a`; `b` and `c` were past its budget. The re-run dumped `b` only.
struct Dumps {
  TempDir first, rerun;
  explicit Dumps(const std::string& rerun_file = "tensors/b.output.0.npy") {
    write_npy_f32(first / "tensors/a.npy", {1, 2});
    write_bytes(first / "manifest.jsonl",
                kManifestHeader + "\n" + record("a", "output", 0, "ha", R"("file": "tensors/a.npy", )") + "\n" +
                    record("b", "input", 0, "ha", kOverBudget) + "\n" + record("b", "output", 0, "hb", kOverBudget) +
                    "\n" + record("b", "output", 1, "hb1", kOverBudget) + "\n" +
                    record("b", "output", 2, "hb2", kOverBudget) + "\n" + record("c", "output", 0, "hc", kOverBudget) +
                    "\n" + kEnd + "\n");
    write_npy_f32(rerun / "tensors/b.input.0.npy", {1, 2});
    write_npy_f32(rerun / "tensors/b.output.0.npy", {1.5f, 2});
    write_npy_f32(rerun / "tensors/b.output.0.truth_delta.npy", {0, 0});
    write_npy_f32(rerun / "tensors/b.output.1.npy", {9, 9});
    write_bytes(
        rerun / "manifest.jsonl",
        kManifestHeader + "\n" + record("b", "input", 0, "ha", R"("file": "tensors/b.input.0.npy", )") + "\n" +
            record(
                "b", "output", 0, "hb",
                R"("file": ")" + rerun_file +
                    R"(", "truth_delta_file": "tensors/b.output.0.truth_delta.npy", "precision": "torch.float32", )") +
            "\n" + record("b", "output", 1, "other", R"("file": "tensors/b.output.1.npy", )") + "\n" + kEnd + "\n");
  }
};

TEST(DumpFill, FillsTheRegionsRecordsWhoseTensorsAreTheSame) {
  Dumps dumps;
  DumpFill fill = fill_from(dumps.first.path(), dumps.rerun.path(), {"b"}, "target_region");
  EXPECT_EQ(fill.error, "");
  EXPECT_EQ(fill.filled, 2);    // b's input and output 0
  EXPECT_EQ(fill.differed, 1);  // output 1 holds other values in the re-run
  EXPECT_EQ(fill.missing, 1);   // output 2 is not in the re-run

  Manifest manifest = read_manifest(dumps.first.path());
  EXPECT_TRUE(manifest.complete);
  EXPECT_EQ(manifest.error, "");
  ASSERT_EQ(manifest.records.size(), 6u);
  const ManifestRecord& output = find(manifest, "b.OUTPUT.0");
  EXPECT_EQ(output.file, "tensors/target_region/b.output.0.npy");
  EXPECT_EQ(output.truth_delta_file, "tensors/target_region/b.output.0.truth_delta.npy");
  EXPECT_EQ(output.not_kept, "");
  EXPECT_EQ(output.precision, "torch.float32");
  TensorRef tensor = manifest_tensor(manifest, output);
  ASSERT_TRUE(tensor.ok()) << tensor.error;
  ASSERT_TRUE(manifest_truth(manifest, output).has_value());
  EXPECT_TRUE(manifest_tensor(manifest, find(manifest, "b.INPUT.0")).ok());
  EXPECT_EQ(find(manifest, "b.OUTPUT.1").not_kept, "budget");
  EXPECT_EQ(find(manifest, "b.OUTPUT.2").not_kept, "budget");
  EXPECT_EQ(find(manifest, "c.OUTPUT.0").not_kept, "budget");  // outside the region
  EXPECT_EQ(find(manifest, "a.OUTPUT.0").file, "tensors/a.npy");
  EXPECT_NE(testing_support::read_text(dumps.first / "manifest.jsonl").find(R"("filled_by":"target_region")"),
            std::string::npos);

  // Filling again changes nothing: the filled records are no longer past the budget.
  const std::string before = testing_support::read_text(dumps.first / "manifest.jsonl");
  DumpFill again = fill_from(dumps.first.path(), dumps.rerun.path(), {"b"}, "target_region");
  EXPECT_EQ(again.filled, 0);
  EXPECT_EQ(testing_support::read_text(dumps.first / "manifest.jsonl"), before);
}

TEST(DumpFill, NeverTakesAFileFromOutsideTheRerunsDump) {
  Dumps dumps("../../escaped.npy");
  DumpFill fill = fill_from(dumps.first.path(), dumps.rerun.path(), {"b"}, "target_region");
  EXPECT_EQ(fill.filled, 1);  // the input only
  EXPECT_EQ(find(read_manifest(dumps.first.path()), "b.OUTPUT.0").not_kept, "budget");
}

TEST(DumpFill, FillsEachRankFromTheSameRank) {
  TempDir first, rerun;
  for (const char* rank : {"rank0", "rank1"}) {
    write_bytes(
        first / (std::string(rank) + "/manifest.jsonl"),
        kManifestHeader + "\n" + record("b", "output", 0, std::string("h") + rank, kOverBudget) + "\n" + kEnd + "\n");
    write_npy_f32(rerun / (std::string(rank) + "/tensors/b.npy"), {1, 2});
    write_bytes(rerun / (std::string(rank) + "/manifest.jsonl"),
                kManifestHeader + "\n" +
                    record("b", "output", 0, std::string("h") + rank, R"("file": "tensors/b.npy", )") + "\n" + kEnd +
                    "\n");
  }
  DumpFill fill = fill_from(first.path(), rerun.path(), {"b"}, "region");
  EXPECT_EQ(fill.error, "");
  EXPECT_EQ(fill.filled, 2);
}

TEST(DumpFill, AnUnreadableRerunChangesNothing) {
  Dumps dumps;
  const std::string before = testing_support::read_text(dumps.first / "manifest.jsonl");
  DumpFill fill = fill_from(dumps.first.path(), dumps.first / "nowhere", {"b"}, "region");
  EXPECT_NE(fill.error, "");
  EXPECT_EQ(fill.filled, 0);
  EXPECT_EQ(testing_support::read_text(dumps.first / "manifest.jsonl"), before);
}

TEST(DumpFill, FieldsOfTheWrongTypeAreIgnoredNotThrown) {
  TempDir first, rerun;
  const std::string hostile =
      R"({"type": 5})"
      "\n"
      R"({"type": "budget", "limit_bytes": "many"})"
      "\n" +
      record("b", "output", 0, "hb", kOverBudget) + "\n" +
      R"({"type": "tensor", "seq": 2, "op_key": "b", "io": "output", "index": 1, "not_kept": "budget", "stats": {"hash": 7}})" +
      "\n";
  write_bytes(first / "manifest.jsonl", kManifestHeader + "\n" + hostile + kEnd + "\n");
  write_bytes(rerun / "manifest.jsonl", R"({"type": "header", "format": "diagnose-dump", "version": "1"})"
                                        "\n");
  Manifest manifest = read_manifest(first.path());
  EXPECT_EQ(manifest.error, "");
  EXPECT_EQ(manifest.records.size(), 2u);
  EXPECT_EQ(read_manifest(rerun.path()).error.find("version 0 is not supported") != std::string::npos, true);
  DumpFill fill = fill_from(first.path(), rerun.path(), {"b"}, "region");
  EXPECT_EQ(fill.filled, 0);
  EXPECT_NE(fill.error, "");
}

}  // namespace
}  // namespace diagnose::compare
