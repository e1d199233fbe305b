// The known-cause detectors (steps/causes/known_causes.h), each on the status.json or dump a run
// would record, written here; the catalogue's scopes; a workflow's own causes.
#include "steps/causes/known_causes.h"

#include <gtest/gtest.h>

#include "tests/compare/test_files.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

using nlohmann::json;
using testing_support::TempDir;
using testing_support::write_text;

RecordedRun run_with(const json& spec, const json& configuration, const std::string& dump_dir = "") {
  json status = {{"spec", spec}, {"configuration", configuration}};
  return {"step/run", parse_plugin_status(status), dump_dir};
}

const json kEager = {{"mode", "eager"}, {"backend", "inductor"}, {"device", "cpu"}};
const json kCompiled = {{"mode", "compiled"}, {"backend", "inductor"}, {"device", "cpu"}};

// A dump of statistics-only records: (op, io, stats) in execution order.
std::string write_dump(const TempDir& dir, const std::vector<std::tuple<std::string, std::string, json>>& records) {
  std::string text = R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                     "\n";
  int seq = 0;
  for (const auto& [op, io, stats] : records) {
    if (io == "input") ++seq;
    text +=
        json{{"type", "tensor"},         {"seq", seq},   {"op_key", op + "#0"}, {"op", op}, {"io", io}, {"index", 0},
             {"dtype", "torch.float16"}, {"shape", {4}}, {"stats", stats}}
            .dump() +
        "\n";
  }
  write_text(dir / "manifest.jsonl", text + R"({"type": "end", "records": 0})" + "\n");
  return dir.path();
}

json stats(double min, double max, int inf = 0, const std::string& hash = "h") {
  return {{"min", min}, {"max", max}, {"nan", 0}, {"inf", inf}, {"hash", hash}};
}

TEST(KnownCauses, TrainingModeWithActiveDropoutIsDecisive) {
  json dropout = {{"training", true}, {"active_dropout", {{{"module", "layers.2"}, {"p", 0.1}}}}};
  std::optional<Detection> found = detect_training_dropout(run_with(kEager, dropout));
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->decisive);
  EXPECT_NE(found->evidence.find("layers.2 (p=0.1)"), std::string::npos) << found->evidence;
  EXPECT_FALSE(detect_training_dropout(run_with(kEager, {{"training", true}, {"active_dropout", json::array()}})));
  json fallback = kCompiled;
  fallback["switches"] = {{"inductor", {{"fallback_random", true}}}};
  EXPECT_FALSE(detect_training_dropout(run_with(fallback, dropout)));  // eager's random numbers in graph mode
}

TEST(KnownCauses, Tf32FlagsArePresentNotDecisive) {
  std::optional<Detection> found = detect_tf32(run_with(kEager, {{"cuda_matmul_allow_tf32", true}}));
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->decisive);
  EXPECT_TRUE(detect_tf32(run_with(kEager, {{"float32_matmul_precision", "high"}})));
  EXPECT_FALSE(detect_tf32(run_with(
      kEager,
      {{"cuda_matmul_allow_tf32", false}, {"cudnn_allow_tf32", false}, {"float32_matmul_precision", "highest"}})));
}

TEST(KnownCauses, NondeterministicAlgorithmsWhenTheFlagIsOff) {
  EXPECT_TRUE(detect_nondeterministic_algorithms(run_with(kEager, {{"deterministic_algorithms", false}})));
  EXPECT_FALSE(detect_nondeterministic_algorithms(run_with(kEager, {{"deterministic_algorithms", true}})));
  EXPECT_FALSE(detect_nondeterministic_algorithms(run_with(kEager, json::object())));  // not recorded
}

TEST(KnownCauses, GraphBreaksOfCompiledRuns) {
  RecordedRun broken = run_with(kCompiled, json::object());
  broken.status.graphs =
      parse_plugin_status(
          {{"graphs", {{"count", 2}, {"graph_breaks", 1}, {"graph_break_reasons", {"call_function print"}}}}})
          .graphs;
  std::optional<Detection> found = detect_graph_breaks(broken);
  ASSERT_TRUE(found);
  EXPECT_NE(found->evidence.find("call_function print"), std::string::npos) << found->evidence;
  broken.status.graphs = parse_plugin_status({{"graphs", {{"count", 3}, {"graph_breaks", 0}}}}).graphs;
  EXPECT_FALSE(detect_graph_breaks(broken));
  EXPECT_FALSE(detect_graph_breaks(run_with(kEager, json::object())));
}

// The reasons are Dynamo's own (torch 2.13, guard_failures), recorded from real recompiles.
TEST(KnownCauses, RecompilesOnChangedSizesNameTheFailedGuards) {
  const std::string size = "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 4";
  const std::string rank = "0/2: tensor 'x' rank mismatch. expected 3, actual 2";
  const std::string dynamic_range =
      "0/7: 2 <= x.size()[0]  # return torch.tanh(x) * n  # g.py:4 in f (user code shown is first use of this "
      "value--the guard itself is not due user code but due to 0/1 specialization in the framework; to avoid "
      "specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim))";
  const std::string dtype = "0/3: tensor 'x' dtype mismatch. expected Double, actual Float";
  RecordedRun run = run_with(kCompiled, json::object());
  run.status.graphs =
      parse_plugin_status({{"graphs", {{"count", 2}, {"recompiles", 1}, {"recompile_reasons", {size}}}}}).graphs;
  std::optional<Detection> found = detect_shape_recompiles(run);
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->decisive);
  EXPECT_NE(found->evidence.find("1 recompile(s), 1 of the 1 recorded on changed sizes"), std::string::npos)
      << found->evidence;
  EXPECT_NE(found->evidence.find("size mismatch at index 0"), std::string::npos) << found->evidence;
  const KnownCause* cause = nullptr;
  for (const KnownCause& c : known_causes())
    if (c.name == "dynamic_shape_recompiles") cause = &c;
  ASSERT_TRUE(cause);
  EXPECT_NE(cause->fix.find("mark_dynamic"), std::string::npos);
  EXPECT_NE(cause->fix.find("automatic_dynamic_shapes"), std::string::npos);

  run.status.graphs =
      parse_plugin_status(
          {{"graphs", {{"count", 4}, {"recompiles", 4}, {"recompile_reasons", {dtype, rank, dynamic_range, size}}}}})
          .graphs;
  found = detect_shape_recompiles(run);
  ASSERT_TRUE(found);
  EXPECT_NE(found->evidence.find("4 recompile(s), 3 of the 4 recorded on changed sizes"), std::string::npos)
      << found->evidence;
  EXPECT_EQ(found->evidence.find("dtype mismatch"), std::string::npos) << found->evidence;

  const std::string requires_grad = "0/4: tensor 'x' requires_grad mismatch. expected requires_grad=1";
  const std::string stride = "0/1: tensor 'x' stride mismatch at index 0. expected 3, actual 1";
  const std::string python_value = "0/5: n == 3  # return torch.tanh(x) * n  # g.py:4 in f";
  run.status.graphs =
      parse_plugin_status(
          {{"graphs",
            {{"count", 4}, {"recompiles", 4}, {"recompile_reasons", {dtype, requires_grad, stride, python_value}}}}})
          .graphs;
  EXPECT_FALSE(detect_shape_recompiles(run));  // recompiles, none on sizes

  run.status.graphs =
      parse_plugin_status({{"graphs", {{"count", 2}, {"recompiles", 1}, {"recompile_reasons", json::array()}}}}).graphs;
  found = detect_shape_recompiles(run);  // a torch without guard_failures: said, not guessed
  ASSERT_TRUE(found);
  EXPECT_NE(found->evidence.find("not recorded: sizes may have changed"), std::string::npos) << found->evidence;
  run.status.graphs =
      parse_plugin_status({{"graphs", {{"count", 1}, {"recompiles", 0}, {"recompile_reasons", json::array()}}}}).graphs;
  EXPECT_FALSE(detect_shape_recompiles(run));
  run.status.graphs =
      parse_plugin_status({{"graphs", {{"count", 1}, {"recompiles", "many"}}}}).graphs;  // not what the plugin writes
  EXPECT_FALSE(detect_shape_recompiles(run));
}

TEST(KnownCauses, TorchairPrecisionModeLoweringFloat32IsDecisive) {
  RecordedRun run = run_with({{"mode", "compiled"}, {"backend", "torchair"}, {"dtype", "float32"}}, json::object());
  run.status.torchair_options = {{"ge_config.precision_mode", "force_fp16"}};
  std::optional<Detection> found = detect_torchair_options(run);
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->decisive);
  run.status.torchair_options = {{"experimental_config.frozen_parameter", true}};
  found = detect_torchair_options(run);
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->decisive);
}

TEST(KnownCauses, EagerOverflowNamesTheFirstOpMakingInfFromFiniteInputs) {
  TempDir dir;
  std::string dump = write_dump(dir, {{"aten.addmm.default", "input", stats(-1, 1)},
                                      {"aten.addmm.default", "output", stats(-20, 20)},
                                      {"aten.exp.default", "input", stats(-20, 20)},
                                      {"aten.exp.default", "output", stats(0, 60000, 5)},
                                      {"aten.div.Tensor", "input", stats(0, 60000, 5)},
                                      {"aten.div.Tensor", "output", stats(0, 1, 5)}});
  json float16 = kEager;
  float16["dtype"] = "float16";
  std::optional<Detection> found = detect_eager_overflow(run_with(float16, json::object(), dump));
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->decisive);
  EXPECT_EQ(found->op, "aten.exp.default");
  EXPECT_FALSE(detect_eager_overflow(run_with(kCompiled, json::object(), dump)));  // eager runs only
  // A float32 model (casting to float16 inside) without a truth: nothing says the overflow is the precision's.
  EXPECT_FALSE(detect_eager_overflow(run_with(kEager, json::object(), dump)));
}

TEST(KnownCauses, EagerOverflowInAFloat32ModelWhereTheTruthIsFinite) {
  TempDir dir;
  const double truth[4] = {2.5e7, 4, 1, 0.25};  // (x.half() * x.half()) in float64: no overflow
  write_text(dir / "tensors/mul.truth.npy", testing::npy_bytes("<f8", "(4,)", truth, sizeof truth));
  json mul = {{"type", "tensor"},         {"seq", 1},      {"op_key", "aten.mul.Tensor#0"},
              {"op", "aten.mul.Tensor"},  {"io", "input"}, {"index", 0},
              {"dtype", "torch.float16"}, {"shape", {4}},  {"stats", stats(0.5, 5000)}};
  std::string text = R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                     "\n" +
                     mul.dump() + "\n";
  mul["io"] = "output";
  mul["stats"] = stats(0.25, 4, 1);
  mul["truth_file"] = "tensors/mul.truth.npy";
  write_text(dir / "manifest.jsonl", text + mul.dump() + "\n" + R"({"type": "end", "records": 0})" + "\n");
  std::optional<Detection> found = detect_eager_overflow(run_with(kEager, json::object(), dir.path()));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->op, "aten.mul.Tensor");
  EXPECT_NE(found->evidence.find("where its float64 truth is finite"), std::string::npos) << found->evidence;
}

TEST(KnownCauses, Float16NearTheOverflowBound) {
  TempDir near, far;
  std::string close =
      write_dump(near, {{"aten.mul.Tensor", "input", stats(-1, 1)}, {"aten.mul.Tensor", "output", stats(-40000, 10)}});
  std::optional<Detection> found = detect_near_overflow(run_with(kEager, json::object(), close));
  ASSERT_TRUE(found);
  EXPECT_FALSE(found->decisive);
  EXPECT_EQ(found->op, "aten.mul.Tensor");
  std::string small =
      write_dump(far, {{"aten.mul.Tensor", "input", stats(-1, 1)}, {"aten.mul.Tensor", "output", stats(-100, 10)}});
  EXPECT_FALSE(detect_near_overflow(run_with(kEager, json::object(), small)));
}

TEST(KnownCauses, RandomOpsInAnEagerDump) {
  TempDir dir;
  std::string dump = write_dump(dir, {{"aten.randn_like.default", "output", stats(-1, 1)}});
  EXPECT_TRUE(records_random_ops({run_with(kEager, json::object(), dump)}));
  EXPECT_FALSE(records_random_ops({run_with(kCompiled, json::object(), dump)}));
}

TEST(KnownCauses, RunToRunDifferencesByOutputHash) {
  TempDir a, b;
  auto outputs = [](const TempDir& dir, const std::string& hash) {
    write_text(dir / "outputs/manifest.jsonl", R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                                               "\n" +
                                                   json{{"type", "tensor"},
                                                        {"seq", 0},
                                                        {"kind", "final"},
                                                        {"op_key", "output"},
                                                        {"io", "output"},
                                                        {"index", 0},
                                                        {"dtype", "torch.float32"},
                                                        {"shape", {2}},
                                                        {"stats", stats(0, 1, 0, hash)}}
                                                       .dump() +
                                                   "\n");
  };
  outputs(a, "aaaa");
  outputs(b, "aaaa");
  ASSERT_TRUE(differing_outputs(a.path(), b.path()));
  EXPECT_TRUE(differing_outputs(a.path(), b.path())->empty());
  outputs(b, "bbbb");
  EXPECT_EQ(differing_outputs(a.path(), b.path())->size(), 1u);
  TempDir none;
  EXPECT_FALSE(differing_outputs(a.path(), none.path()));
}

// A dump of records (op_key, io, hash, kind) in execution order: a call's records share its seq.
std::string write_hashed_dump(const TempDir& dir,
                              const std::vector<std::tuple<std::string, std::string, std::string>>& records) {
  std::string text = R"({"type": "header", "format": "diagnose-dump", "version": 1})"
                     "\n";
  int seq = 0;
  std::string last;
  for (const auto& [op, io, hash] : records) {
    if (op != last) ++seq;
    last = op;
    const bool final = op == "output";
    json record = {{"type", "tensor"},
                   {"seq", seq},
                   {"kind", final ? "final" : "op"},
                   {"op_key", op},
                   {"io", io},
                   {"index", 0},
                   {"dtype", "torch.float32"},
                   {"shape", {4}},
                   {"stats", stats(0, 1, 0, hash)}};
    if (!final) record["op"] = op.substr(0, op.find('#'));
    text += record.dump() + "\n";
  }
  write_text(dir / "manifest.jsonl", text + R"({"type": "end", "records": 0})" + "\n");
  return dir.path();
}

TEST(KnownCauses, NondeterministicOpIsTheFirstWithEqualInputsAndADifferentOutput) {
  TempDir first, second;
  auto dump = [](const TempDir& dir, const std::string& pooled, const std::string& empty) {
    return write_hashed_dump(dir, {{"aten.addmm.default#0", "input", "x"},
                                   {"aten.addmm.default#0", "output", "h"},
                                   {"aten.empty_like.default#0", "output", empty},  // never judged by value
                                   {"aten.bernoulli.p#0", "input", "h"},
                                   {"aten.bernoulli.p#0", "output", empty},  // the generator's doing
                                   {"ext.bucket_sum.default#0", "input", "h"},
                                   {"ext.bucket_sum.default#0", "output", pooled},
                                   {"aten.relu.default#0", "input", pooled},
                                   {"aten.relu.default#0", "output", pooled + "r"},
                                   {"output", "output", pooled + "o"}});
  };
  RecordedRun run = run_with(kEager, json::object(), dump(first, "p1", "e1"));
  RecordedRun repeat = run_with(kEager, json::object(), dump(second, "p2", "e2"));
  run.name = "known/eager";
  repeat.name = "known/repeat";
  std::optional<Detection> found = detect_nondeterministic_op(run, repeat);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->op, "ext.bucket_sum.default");  // not relu, whose inputs already differ
  EXPECT_TRUE(found->decisive);                    // the final outputs differ too
  EXPECT_NE(found->evidence.find("known/repeat"), std::string::npos) << found->evidence;

  TempDir same;
  RecordedRun deterministic = run_with(kEager, json::object(), dump(same, "p1", "e3"));
  EXPECT_FALSE(detect_nondeterministic_op(run, deterministic));  // only uninitialised and random outputs differ
  RecordedRun other_dtype = repeat;
  other_dtype.status.spec["dtype"] = "bfloat16";
  EXPECT_FALSE(detect_nondeterministic_op(run, other_dtype));  // not the same configuration
  RecordedRun undumped = repeat;
  undumped.dump_dir = "";
  EXPECT_FALSE(detect_nondeterministic_op(run, undumped));
}

TEST(KnownCauses, ScopesByBackendDeviceAndDtype) {
  const KnownCause* tf32 = nullptr;
  const KnownCause* fallback = nullptr;
  for (const KnownCause& cause : known_causes()) {
    if (cause.name == "tf32_matmul") tf32 = &cause;
    if (cause.name == "fallback_random") fallback = &cause;
    EXPECT_FALSE(cause.fix.empty()) << cause.name;
    EXPECT_TRUE(cause.detect || cause.flip) << cause.name;
  }
  ASSERT_TRUE(tf32 && fallback);
  EXPECT_TRUE(cause_applies(*tf32, "inductor", "cuda:1", ""));
  EXPECT_FALSE(cause_applies(*tf32, "inductor", "cpu", "float32"));
  EXPECT_FALSE(cause_applies(*tf32, "inductor", "cuda", "bfloat16"));
  EXPECT_TRUE(cause_applies(*fallback, "inductor", "cpu", "bfloat16"));
  EXPECT_FALSE(cause_applies(*fallback, "torchair", "npu", "float32"));
}

TEST(KnownCauses, AWorkflowsOwnCausesAreValidated) {
  YAML::Node causes = YAML::Load(R"yaml(
- {name: no_fast_math, flip: {env: {FAST_MATH: "0"}, args: [--exact]}, fix: "unset FAST_MATH"}
- {name: fused_adam, flip: {switches: {inductor: {max_autotune: false}}}}
- {name: fallback_random, flip: {env: {A: "1"}}}
- {name: nothing, flip: {}}
- {flip: {env: {A: "1"}}}
)yaml");
  Diagnostics diagnostics("wf.yaml");
  std::vector<KnownCause> parsed = user_causes(causes, "steps.known", &diagnostics);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].flip->env.at("FAST_MATH"), "0");
  EXPECT_EQ(parsed[0].flip->args, std::vector<std::string>{"--exact"});
  EXPECT_EQ(parsed[1].flip->spec.switches->inductor->at("max_autotune"), false);
  ASSERT_EQ(diagnostics.list().size(), 3u);
  EXPECT_NE(diagnostics.list()[0].message.find("'fallback_random' is already a cause"), std::string::npos);
  EXPECT_EQ(diagnostics.list()[0].line, 4);  // the name's line, 1-based
  EXPECT_NE(diagnostics.list()[1].message.find("causes[3].flip"), std::string::npos);
  EXPECT_NE(diagnostics.list()[2].message.find("needs a name"), std::string::npos);
}

}  // namespace
}  // namespace diagnose
