// NaN/Inf origins found in small diagnose dumps written here (statistics-only records: the
// rule reads the recorded nan/inf counts).
#include "steps/judgement/nan_origin.h"

#include <gtest/gtest.h>

#include "tests/compare/test_files.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

using testing_support::TempDir;
using testing_support::write_text;

// One record line: op call `seq` of `op`, its `io` tensor with `nan` NaNs and `inf` Infs.
std::string record(int seq, const std::string& op, const std::string& io, int nan, int inf = 0) {
  return R"({"type": "tensor", "seq": )" + std::to_string(seq) + R"(, "op_key": "net/)" + op + "#0" + R"(", "op": ")" +
         op + R"(", "io": ")" + io +
         R"(", "index": 0, "dtype": "torch.float16", "shape": [4], "module": "net", "stats": {"nan": )" +
         std::to_string(nan) + R"(, "inf": )" + std::to_string(inf) + "}}\n";
}

void write_dump(const std::string& dir, const std::string& records) {
  write_text(dir + "/manifest.jsonl", R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                                      "\n" +
                                          records + R"({"type": "end", "records": 0})" + "\n");
}

TEST(NanOrigin, FirstOpWithNonFiniteOutputsFromFiniteInputs) {
  TempDir dump;
  write_dump(dump.path(), record(1, "aten.mm.default", "input", 0) + record(1, "aten.mm.default", "output", 0) +
                              record(2, "aten.exp.default", "input", 0) +
                              record(2, "aten.exp.default", "output", 0, 3) +
                              record(3, "aten.sub.Tensor", "input", 0, 3) + record(3, "aten.sub.Tensor", "output", 2));
  const std::vector<NanOrigin> origins = find_nan_origins(dump.path(), "target");
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].op_key, "net/aten.exp.default#0");
  EXPECT_EQ(origins[0].op, "aten.exp.default");
  EXPECT_EQ(origins[0].kind, "inf");
  EXPECT_EQ(origins[0].seq, 2);
  EXPECT_EQ(origins[0].inf, 3u);
  EXPECT_EQ(origins[0].rank, -1);
  EXPECT_EQ(origins[0].inputs, NanOriginInputs::Finite);
  EXPECT_EQ(origins[0].module, "net");
  EXPECT_EQ(nan_origin_summary(origins, {"target", "golden"}),
            "Inf first appears at net/aten.exp.default#0 (target); golden stays finite");
}

TEST(NanOrigin, SaysWhetherTheFloat64TruthIsFiniteThere) {
  TempDir dump;
  // exp overflows float16 where float64 does not: the side's precision, not the model.
  const double overflow[4] = {1e5, 1, 2, 3}, in_float64_too[4] = {INFINITY, 1, 2, 3};
  write_text(dump / "tensors/spurious.npy", testing::npy_bytes("<f8", "(4,)", overflow, sizeof overflow));
  write_text(dump / "tensors/genuine.npy", testing::npy_bytes("<f8", "(4,)", in_float64_too, sizeof in_float64_too));
  std::string exp = record(2, "aten.exp.default", "output", 0, 1);
  exp.insert(exp.rfind('}'), R"(, "truth_file": "tensors/spurious.npy")");
  write_dump(dump.path(), record(2, "aten.exp.default", "input", 0) + exp);
  std::vector<NanOrigin> origins = find_nan_origins(dump.path(), "golden");
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].truth_finite, true);
  EXPECT_EQ(nan_origin_summary(origins, {"target", "golden"}),
            "Inf first appears at net/aten.exp.default#0 (golden; float64 truth finite there); target stays finite");
  write_dump(dump.path(),
             record(2, "aten.exp.default", "input", 0) + std::string(exp).replace(exp.find("spurious"), 8, "genuine"));
  origins = find_nan_origins(dump.path(), "golden");
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].truth_finite, false);
  EXPECT_EQ(nan_origin_summary(origins, {"golden"}),
            "Inf first appears at net/aten.exp.default#0 (golden; NaN/Inf in float64 too)");
}

TEST(NanOrigin, AnOpWhoseInputsAreAlreadyNanIsNoOrigin) {
  TempDir dump;
  // The model's input holds a NaN: mm only passes it on. Later, log makes a NaN of its own
  // from finite inputs: that is the origin the rule names.
  write_dump(dump.path(), record(1, "aten.mm.default", "input", 2) + record(1, "aten.mm.default", "output", 8) +
                              record(2, "aten.log.default", "input", 0) + record(2, "aten.log.default", "output", 1));
  std::vector<NanOrigin> origins = find_nan_origins(dump.path());
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].op, "aten.log.default");
  EXPECT_EQ(origins[0].kind, "nan");

  // Without log, no op made the NaN: where it appears is the inputs of mm.
  write_dump(dump.path(), record(1, "aten.mm.default", "input", 2) + record(1, "aten.mm.default", "output", 8) +
                              record(2, "aten.relu.default", "input", 8) + record(2, "aten.relu.default", "output", 8));
  origins = find_nan_origins(dump.path(), "golden");
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].op, "aten.mm.default");
  EXPECT_EQ(origins[0].inputs, NanOriginInputs::NonFinite);
  EXPECT_EQ(origins[0].nan, 2u);  // the inputs' count
  EXPECT_EQ(nan_origin_summary(origins, {"golden"}), "NaN is already in the inputs of net/aten.mm.default#0 (golden)");
}

TEST(NanOrigin, OutputsOnlyDumpNamesTheFirstNonFiniteOutput) {
  TempDir dump;
  write_dump(dump.path(), record(1, "aten.mm.default", "output", 0) + record(2, "aten.exp.default", "output", 1) +
                              record(3, "aten.add.Tensor", "output", 1));
  const std::vector<NanOrigin> origins = find_nan_origins(dump.path(), "target");
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].op, "aten.exp.default");
  EXPECT_EQ(origins[0].inputs, NanOriginInputs::NotDumped);
  EXPECT_EQ(nan_origin_summary(origins, {"target"}),
            "NaN first appears at net/aten.exp.default#0 (target; its inputs not dumped)");
}

TEST(NanOrigin, OnePerRankInRankOrder) {
  TempDir dump;
  write_dump(dump / "rank1", record(1, "aten.mm.default", "input", 0) + record(1, "aten.mm.default", "output", 0) +
                                 record(2, "aten.div.Tensor", "input", 0) + record(2, "aten.div.Tensor", "output", 1));
  write_dump(dump / "rank0", record(1, "aten.mm.default", "input", 0) + record(1, "aten.mm.default", "output", 0, 1));
  write_dump(dump / "rank2", record(1, "aten.mm.default", "input", 0) + record(1, "aten.mm.default", "output", 0));
  const std::vector<NanOrigin> origins = find_nan_origins(dump.path(), "target");
  ASSERT_EQ(origins.size(), 2u);  // rank 2 stays finite
  EXPECT_EQ(origins[0].rank, 0);
  EXPECT_EQ(origins[0].op, "aten.mm.default");
  EXPECT_EQ(origins[1].rank, 1);
  EXPECT_EQ(origins[1].op, "aten.div.Tensor");
  EXPECT_EQ(nan_origin_summary(origins, {"target", "golden"}),
            "Inf first appears at net/aten.mm.default#0 on rank 0 (target); NaN first appears at "
            "net/aten.div.Tensor#0 on rank 1 (target); golden stays finite");
}

TEST(NanOrigin, NoneWhenFiniteUninitialisedOrNoDump) {
  TempDir dump, empty;
  // empty_like's garbage may hold NaN: nobody computed it.
  write_dump(dump.path(), record(1, "aten.empty_like.default", "input", 0) +
                              record(1, "aten.empty_like.default", "output", 5) +
                              record(2, "aten.add.Tensor", "input", 0) + record(2, "aten.add.Tensor", "output", 0));
  EXPECT_TRUE(find_nan_origins(dump.path()).empty());
  EXPECT_TRUE(find_nan_origins(empty.path()).empty());
  EXPECT_TRUE(find_nan_origins(empty / "missing").empty());
  EXPECT_EQ(nan_origin_summary({}, {"target", "golden"}), "");
}

TEST(NanOrigin, ReportedInTheStepResult) {
  TempDir golden, target;
  write_dump(golden.path(), record(1, "aten.exp.default", "input", 0) + record(1, "aten.exp.default", "output", 0));
  write_dump(target.path(), record(1, "aten.exp.default", "input", 0) + record(1, "aten.exp.default", "output", 0, 2));
  StepResult result;
  result.summary = "1 of 2 judged rows fail";
  report_nan_origins(golden.path(), target.path(), result);
  EXPECT_EQ(result.summary,
            "1 of 2 judged rows fail; Inf first appears at net/aten.exp.default#0 (target); golden stays finite");
  ASSERT_EQ(result.metrics["nan_origin"].size(), 1u);
  EXPECT_EQ(result.metrics["nan_origin"][0]["op"], "net/aten.exp.default#0");
  EXPECT_EQ(result.metrics["nan_origin"][0]["side"], "target");
  EXPECT_EQ(result.metrics["nan_origin"][0]["inputs"], "finite");
  ASSERT_EQ(result.evidence.size(), 1u);
  EXPECT_EQ(result.evidence[0].kind, "table");

  StepResult finite;
  report_nan_origins(golden.path(), golden.path(), finite);
  EXPECT_EQ(finite.metrics["nan_origin"], nlohmann::json::array());
  EXPECT_TRUE(finite.summary.empty());
  EXPECT_TRUE(finite.evidence.empty());
}

TEST(NanOrigin, AMaskFilledWithMinusInfIsNoOrigin) {
  TempDir dump;
  // masked_fill(scores, mask, -inf) writes -inf on purpose (its record says nonfinite_constant);
  // softmax reads it. A NaN that exp makes later from finite inputs is still an origin.
  std::string masked = record(2, "aten.masked_fill.Scalar", "output", 0, 6);
  masked.insert(masked.rfind('}'), R"(, "nonfinite_constant": true)");
  write_dump(dump.path(), record(1, "aten.mm.default", "output", 0) + record(2, "aten.masked_fill.Scalar", "input", 0) +
                              masked + record(3, "aten._softmax.default", "input", 0, 6) +
                              record(3, "aten._softmax.default", "output", 0));
  EXPECT_TRUE(find_nan_origins(dump.path()).empty());
  write_dump(dump.path(), record(2, "aten.masked_fill.Scalar", "input", 0) + masked +
                              record(4, "aten.exp.default", "input", 0) +
                              record(4, "aten.exp.default", "output", 0, 1));
  const std::vector<NanOrigin> origins = find_nan_origins(dump.path());
  ASSERT_EQ(origins.size(), 1u);
  EXPECT_EQ(origins[0].op, "aten.exp.default");
}

}  // namespace
}  // namespace diagnose
