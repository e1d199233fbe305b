// The diagnostic step kinds' own logic: the single-op inventory, batching and re-batching
// after a crash, the meta check and graph-break readers; then each kind run by the diagnose
// binary against a stand-in plugin (scripts/stand_in_plugin: same commands and files as
// plugins/pytorch, no torch), whose behaviour the environment chooses.
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <set>

#include "steps/judgement/dynamo_findings.h"
#include "steps/single_op/single_op_batches.h"
#include "tests/compare/test_files.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

TEST(SingleOpBatches, InventoryParsesAndRejects) {
  std::string error;
  auto ops = parse_op_inventory(R"([{"op": "aten.mm.default", "calls": 3}, {"op": "aten.add.Tensor"},
                                    {"op": "aten.mm.default", "calls": 1}])",
                                &error);
  ASSERT_TRUE(ops) << error;
  ASSERT_EQ(ops->size(), 2u);  // duplicates folded
  EXPECT_EQ((*ops)[0].op, "aten.mm.default");
  EXPECT_EQ((*ops)[0].calls, 3);
  EXPECT_FALSE(parse_op_inventory("Traceback ...", &error));
  EXPECT_EQ(error, "the op inventory is not a JSON list");
  EXPECT_FALSE(parse_op_inventory(R"([{"calls": 1}])", &error));
  EXPECT_NE(error.find("without an op name"), std::string::npos);
}

TEST(SingleOpBatches, SplitIsBalancedAndKeepsOrder) {
  std::vector<std::string> ops = {"a", "b", "c", "d", "e"};
  auto batches = split_into_batches(ops, 2);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(batches[1], (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(split_into_batches(ops, 9).size(), 5u);  // never an empty batch
  EXPECT_EQ(split_into_batches(ops, 0).size(), 1u);
  EXPECT_TRUE(split_into_batches({}, 3).empty());
}

TEST(SingleOpBatches, SplitByMeasuredCostBalancesTheBatches) {
  std::vector<std::string> ops = {"layer_norm", "t", "addmm", "gelu", "add"};
  // An earlier diagnosis: layer_norm and add compiled slowly, the others fast; gelu unmeasured.
  std::map<std::string, double> measured = {{"layer_norm", 4.7}, {"t", 0.1}, {"addmm", 0.1}, {"add", 4.0}};
  auto batches = split_by_cost(ops, 2, measured);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], (std::vector<std::string>{"layer_norm", "t", "addmm"}));  // 4.9 s
  EXPECT_EQ(batches[1], (std::vector<std::string>{"gelu", "add"}));               // 2.2 s (the mean) + 4.0 s
  EXPECT_EQ(split_by_cost(ops, 2, {}), split_into_batches(ops, 2));
  EXPECT_EQ(split_by_cost(ops, 9, measured).size(), 5u);  // never an empty batch
}

TEST(SingleOpBatches, CostsComeFromTheNewestEarlierDiagnosisOfTheSameWorkflow) {
  TempDir output;
  auto report = [&](const std::string& dir, const std::string& workflow, double seconds) {
    write_text(output / (dir + "/report.json"), R"({"workflow": {"name": ")" + workflow +
                                                    R"("}, "steps": [{"id": "single_op", "metrics": {"op_times": [
                  {"op": "aten.gelu.default", "compile_s": )" +
                                                    std::to_string(seconds) + R"(, "run_s": 0.5}]}}]})");
  };
  report("20261203-100000-demo", "demo", 1.0);
  report("20261203-110000-demo", "demo", 2.0);
  report("20261203-120000-other", "other", 3.0);
  boost::filesystem::create_directories(output / "20261203-130000-demo");
  MeasuredCosts costs = earlier_op_costs(output / "20261203-130000-demo", "demo", "single_op");
  EXPECT_EQ(costs.report, output / "20261203-110000-demo/report.json");
  EXPECT_EQ(costs.seconds, (std::map<std::string, double>{{"aten.gelu.default", 2.5}}));
  EXPECT_TRUE(earlier_op_costs(output / "20261203-130000-demo", "demo", "no_such_step").report.empty());
  EXPECT_TRUE(earlier_op_costs(output / "20261203-100000-demo", "new", "single_op").seconds.empty());
}

TEST(SingleOpBatches, OpCostsAreReadFromTheResultsAndBadEntriesLeftOut) {
  std::map<std::string, OpCost> costs = read_op_costs(R"({"ops": [
    {"op": "a", "compile_s": 2.5, "run_s": 0.25, "compiles": 1,
     "shared_compiles": [{"op_key": "a#1", "compiled_as": "a#0"}]},
    {"op": "b", "status": "compile_error"},
    {"op": "c", "compile_s": "slow", "run_s": 1}]})");
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_EQ(costs["a"].compile_s, 2.5);
  EXPECT_EQ(costs["a"].run_s, 0.25);
  EXPECT_EQ(costs["a"].compiles, 1);
  EXPECT_EQ(costs["a"].shared_compiles[0]["compiled_as"], "a#0");
  EXPECT_TRUE(read_op_costs("{\"ops\": 3}").empty());
  EXPECT_TRUE(read_op_costs("not json").empty());
}

TEST(SingleOpBatches, BatchedCompilesAndTheOpsTheySettledAreRead) {
  std::string results = R"({"ops": [
    {"op": "a", "compile_s": 0.5, "run_s": 0.1, "compiles": 0, "settled_in_batched_compile": true},
    {"op": "b", "compile_s": 1.5, "run_s": 0.1, "compiles": 1, "settled_in_batched_compile": false},
    {"op": "c", "compile_s": 1.5, "run_s": 0.1, "compiles": 1}],
    "batched_compiles": [{"ops": 2, "graphs": 2, "compile_s": 1.0, "settled": 1, "error": ""}]})";
  std::map<std::string, OpCost> costs = read_op_costs(results);
  EXPECT_TRUE(costs["a"].settled_in_batched_compile);
  EXPECT_FALSE(costs["b"].settled_in_batched_compile);
  EXPECT_FALSE(costs["c"].settled_in_batched_compile);
  EXPECT_EQ(read_batched_compile_count(results), 1);
  EXPECT_EQ(read_batched_compile_count(R"({"ops": []})"), 0);
  EXPECT_EQ(read_batched_compile_count("not json"), 0);
}

TEST(SingleOpBatches, DeathInABatchedCompileBlamesNoOp) {
  std::string progress = R"({"op": "a", "event": "start"}
{"op": "a", "event": "done"}
{"event": "batched_compile", "ops": ["b", "c"], "graphs": 2})";
  BatchOutcome died = read_batch_progress(progress, {"a", "b", "c"}, false);
  EXPECT_TRUE(died.died_in_batched_compile);
  EXPECT_FALSE(died.crashed);
  EXPECT_EQ(died.not_started, (std::vector<std::string>{"b", "c"}));
  // after the batched compile, an op alone crashed: it is blamed
  BatchOutcome blamed =
      read_batch_progress(progress + "\n{\"op\": \"b\", \"event\": \"start\"}", {"a", "b", "c"}, false);
  EXPECT_FALSE(blamed.died_in_batched_compile);
  EXPECT_EQ(blamed.crashed, std::optional<std::string>("b"));
  EXPECT_FALSE(read_batch_progress(progress, {"a", "b", "c"}, true).died_in_batched_compile);
}

TEST(SingleOpBatches, SkippedOpsAreNeitherDoneNorErrors) {
  std::string progress = R"({"op": "a", "event": "start"}
{"op": "a", "event": "skipped", "message": "results depend on the RNG", "reason": "random"}
{"op": "b", "event": "start"}
{"op": "b", "event": "skipped", "message": "no tensor output"}
{"op": "c", "event": "start"}
{"op": "c", "event": "done"})";
  BatchOutcome outcome = read_batch_progress(progress, {"a", "b", "c"}, true);
  EXPECT_EQ(outcome.done, (std::vector<std::string>{"c"}));
  EXPECT_TRUE(outcome.errors.empty());
  ASSERT_EQ(outcome.skipped.size(), 2u);
  EXPECT_EQ(outcome.skipped[0].op, "a");
  EXPECT_EQ(outcome.skipped[0].reason, "random");
  EXPECT_EQ(outcome.skipped[0].message, "results depend on the RNG");
  EXPECT_EQ(outcome.skipped[1].reason, "skipped");  // an event without a reason
}

TEST(SingleOpBatches, CommandCarriesTheTargetAndTheSwitches) {
  nlohmann::json target = {{"backend", "torchair"}, {"device", "npu"}, {"dtype", "bfloat16"}};
  EXPECT_EQ(single_op_args("/e", "/o", target, "/s.json", {"aten.a.default", "aten.b.default"}),
            (std::vector<std::string>{"single-op", "--from", "/e", "--out", "/o", "--backend", "torchair", "--device",
                                      "npu", "--dtype", "bfloat16", "--switches", "/s.json", "--ops",
                                      "aten.a.default,aten.b.default"}));
  EXPECT_EQ(
      single_op_args("/e", "/o", nlohmann::json::object(), "", {"x"}),
      (std::vector<std::string>{"single-op", "--from", "/e", "--out", "/o", "--backend", "inductor", "--ops", "x"}));
  EXPECT_EQ(single_op_args("/e", "/o", nlohmann::json::object(), "", {"x"}, /*batched=*/false).back(), "0");
}

TEST(SingleOpBatches, CrashBlamesTheStartedOpAndReturnsTheRest) {
  std::string progress = R"({"op": "a", "event": "start"}
{"op": "a", "event": "done"}
{"op": "b", "event": "start"}
{"op": "b", "event": "error", "message": "lowering failed"}
{"op": "c", "event": "start"}
{"op": "d", "ev)";  // torn last line of a killed process
  BatchOutcome died = read_batch_progress(progress, {"a", "b", "c", "d", "e"}, false);
  EXPECT_EQ(died.done, (std::vector<std::string>{"a"}));
  ASSERT_EQ(died.errors.size(), 1u);
  EXPECT_EQ(died.errors[0], std::make_pair(std::string("b"), std::string("lowering failed")));
  EXPECT_EQ(died.crashed, std::optional<std::string>("c"));
  EXPECT_EQ(died.not_started, (std::vector<std::string>{"d", "e"}));

  // Exit 0 with ops never reported: nothing to re-run, they are errors.
  BatchOutcome ended = read_batch_progress(R"({"op": "a", "event": "done"})", {"a", "b"}, true);
  EXPECT_TRUE(ended.not_started.empty());
  EXPECT_FALSE(ended.crashed);
  ASSERT_EQ(ended.errors.size(), 1u);
  EXPECT_EQ(ended.errors[0].first, "b");
}

TEST(SingleOpBatches, SetupFailureCarriesThePluginsMessage) {
  // The model script exited before its first compiled call: no op started, the message says why.
  BatchOutcome outcome = read_batch_progress(
      R"({"event": "setup_failed", "message": "model.py exited with status 2 before its first compiled call"})",
      {"a", "b"}, false);
  EXPECT_EQ(outcome.setup_error,
            std::optional<std::string>("model.py exited with status 2 before its first compiled call"));
  EXPECT_EQ(outcome.not_started, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(outcome.crashed);
  EXPECT_FALSE(read_batch_progress(R"({"op": "a", "event": "done"})", {"a"}, true).setup_error);
}

TEST(DynamoFindings, MetaMismatchNamesTheOp) {
  nlohmann::json document = nlohmann::json::parse(R"({"ops": [
    {"op": "aten.mm.default", "op_key": "mm#0", "status": "ok"},
    {"op": "demo::scale", "op_key": "layer/demo::scale#0", "status": "mismatch",
     "mismatches": [{"output": 0, "field": "dtype", "eager": "torch.float32", "fake": "torch.bfloat16"}]},
    {"op": "aten.nonzero.default", "status": "skipped"},
    {"op": "demo::broken", "status": "error", "message": "no fake impl"}]})");
  MetaCheckSummary s = summarize_meta_check(document);
  EXPECT_EQ(s.ok, 1);
  EXPECT_EQ(s.mismatched, 1);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_EQ(s.errors, 1);
  EXPECT_EQ(s.mismatched_ops, (std::vector<std::string>{"demo::scale"}));
  ASSERT_EQ(s.findings.size(), 2u);
  EXPECT_EQ(s.findings[0].op, "demo::scale");
  EXPECT_EQ(s.findings[0].message,
            "meta (fake) result of demo::scale (layer/demo::scale#0) differs from eager: output 0 dtype: eager "
            "torch.float32, meta torch.bfloat16");
  EXPECT_EQ(s.table[0]["field"], "dtype");
  EXPECT_THROW(summarize_meta_check(nlohmann::json::parse(R"({"ops": [{"op": "x", "status": "odd"}]})")),
               std::runtime_error);
  EXPECT_THROW(summarize_meta_check(nlohmann::json::parse("[]")), std::runtime_error);
}

TEST(DynamoFindings, CustomOpSchemaViolationNamesTheOpAndWhatItViolates) {
  nlohmann::json document = nlohmann::json::parse(R"({"ops": [
    {"op": "demo.gate.default", "op_key": "demo.gate.default#0", "status": "ok",
     "schema": "demo::gate(Tensor x) -> Tensor",
     "violations": [{"check": "schema", "kind": "undeclared mutation", "message": "writes its input `x` in place"}]},
    {"op": "demo.clean.default", "status": "ok", "schema": "demo::clean(Tensor x) -> Tensor", "violations": []},
    {"op": "demo.odd.default", "status": "ok", "schema": "demo::odd(Tensor x) -> Tensor", "violations": [],
     "schema_error": "TypeError: no"}]})");
  MetaCheckSummary s = summarize_meta_check(document);
  EXPECT_EQ(s.ok, 3);
  EXPECT_EQ(s.custom_ops, 3);
  EXPECT_EQ(s.violating_ops, (std::vector<std::string>{"demo.gate.default"}));
  EXPECT_EQ(violation_kinds(s, "demo.gate.default"), "undeclared mutation");
  ASSERT_EQ(s.findings.size(), 2u);
  EXPECT_EQ(s.findings[0].op, "demo.gate.default");
  EXPECT_EQ(s.findings[0].message,
            "custom op demo::gate (demo.gate.default): undeclared mutation: writes its input `x` in place; schema "
            "demo::gate(Tensor x) -> Tensor (torch.compile trusts the schema, so compiled code may differ from eager)");
  EXPECT_EQ(s.findings[1].message, "schema check of custom op demo::odd (demo.odd.default) raised: TypeError: no");
  EXPECT_EQ(s.violation_table.size(), 1u);
}

TEST(DynamoFindings, GraphBreaksFromStatus) {
  GraphBreaks b = graph_breaks_of(parse_plugin_status(nlohmann::json::parse(
      R"json({"graphs": {"graph_breaks": 2, "graph_break_reasons": ["print()", {"reason": "data-dependent"}],
                         "break_reasons": {"print()": 1}}})json")));
  EXPECT_EQ(b.count, 2);
  EXPECT_EQ(b.reasons, (std::vector<std::string>{"print()", "data-dependent"}));
  EXPECT_EQ(graph_breaks_of(PluginStatus()).count, 0);
}

// --- the kinds run by the diagnose binary on the stand-in plugin --------------------------

std::string stand_in_model(const std::string& env) {
  return "model:\n  script: " + script("model.py") + "\n  python: " + python() +
         "\n  env: {PYTHONPATH: " + script("stand_in_plugin") + (env.empty() ? "" : ", " + env) +
         "}\ndefaults: {slots: 2}\n";
}

nlohmann::json report_of(const TempDir& dir) { return read_json(only_run_dir(dir / "runs") + "/report.json"); }

TEST(DiagnosticSteps, SingleOpCheckReportsWrongAndCrashedOpsAndRebatches) {
  TempDir dir;
  std::string ops = "aten.a.default,aten.b.default,aten.c.default,aten.d.default,aten.e.default,aten.f.default";
  write_text(dir / "wf.yaml",
             stand_in_model("STAND_IN_OPS: \"" + ops +
                            "\", STAND_IN_CRASH_OPS: aten.b.default, STAND_IN_WRONG_OPS: aten.e.default, "
                            "STAND_IN_ERROR_OPS: aten.f.default, STAND_IN_LOG: " +
                            (dir / "ops.log")) +
                 "steps:\n  - {id: single, kind: single_op_check, target: {backend: aot_eager}, attribute_rules: "
                 "false}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  const nlohmann::json& step = report["steps"][0];
  EXPECT_EQ(report["verdict"]["category"], "single_op_graph_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "aten.e.default");
  EXPECT_EQ(step["metrics"]["failed_ops"], (nlohmann::json{"aten.e.default", "aten.b.default"}));
  EXPECT_EQ(step["metrics"]["crashed_ops"], nlohmann::json{"aten.b.default"});
  EXPECT_EQ(step["metrics"]["op_errors"], 1);
  EXPECT_EQ(step["metrics"]["rounds"], 2);  // aten.c.default ran again after the crash
  // Batches [a b c] [d e f]: the crash in b sends c to a second round; no op starts twice, and
  // the target's backend reaches every batch.
  std::string log = read_text(dir / "ops.log");
  for (const char* op : {"aten.a.default", "aten.b.default", "aten.c.default", "aten.d.default", "aten.e.default"}) {
    std::string start = std::string(op) + " start aot_eager\n";
    size_t first = log.find(start);
    EXPECT_NE(first, std::string::npos) << op << "\n" << log;
    EXPECT_EQ(log.find(start, first + 1), std::string::npos) << op << " ran twice\n" << log;
  }
  bool worst_table = false, crash_log = false;
  for (const auto& e : step["evidence"]) {
    worst_table |= e["kind"] == "table" && e["name"] == "worst rows of aten.e.default" && e["value"].size() == 1;
    crash_log |= e["kind"] == "log" && e["name"] == "crash of aten.b.default";
  }
  EXPECT_TRUE(worst_table) << step["evidence"].dump(1);
  EXPECT_TRUE(crash_log);
}

// The stand-in's aten.e.default is wrong while GeluFusionPass is on; TbeEltwiseFusionPass fires
// on it too, innocent. `wrong` adds a defect no rule explains.
std::string rule_workflow(const std::string& wrong) {
  return stand_in_model(
             "STAND_IN_OPS: \"aten.a.default,aten.e.default\", STAND_IN_RULE_OPS: "
             "\"aten.e.default:GeluFusionPass\"" +
             (wrong.empty() ? "" : ", STAND_IN_WRONG_OPS: " + wrong)) +
         "steps:\n  - {id: single, kind: single_op_check, target: {backend: 'ge_like:backend'}}\n";
}

TEST(DiagnosticSteps, SingleOpFailureIsAttributedToTheFusionRuleOnTheFailingOpsAlone) {
  TempDir dir;
  write_text(dir / "wf.yaml", rule_workflow(""));
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  const nlohmann::json& step = report["steps"][0];
  EXPECT_EQ(report["verdict"]["category"], "single_op_graph_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "aten.e.default");  // the op; the rule is the cause
  EXPECT_EQ(step["metrics"]["rules"], nlohmann::json{"GeluFusionPass"});
  EXPECT_EQ(step["metrics"]["rule_conclusion"], "culprits_found");
  std::string workaround = step["metrics"]["workaround"];
  EXPECT_NE(report["verdict"]["summary"].get<std::string>().find(
                "wrong in graph mode: aten.e.default; caused by fusion rule GeluFusionPass: switching it off fixes "
                "it, switch file " +
                workaround),
            std::string::npos)
      << report["verdict"]["summary"];
  nlohmann::json fusion_switch = read_json(workaround)["Switch"];
  EXPECT_EQ(fusion_switch["GraphFusion"]["GeluFusionPass"], "off");
  EXPECT_FALSE(fusion_switch.contains("UBFusion") && fusion_switch["UBFusion"].contains("TbeEltwiseFusionPass") &&
               fusion_switch["UBFusion"]["TbeEltwiseFusionPass"] == "off");
  // Every trial compiled the failing op alone, in its own directory (where the backend writes
  // fusion_result.json), with its switches.
  int trials = 0;
  for (const auto& run : step["runs"]) {
    std::vector<std::string> argv = run["argv"];
    if (std::string(run["name"]).rfind("t", 0) != 0) continue;  // eager, ops, batches
    ++trials;
    EXPECT_EQ(std::vector<std::string>(argv.end() - 2, argv.end()),
              (std::vector<std::string>{"--ops", "aten.e.default"}));
    EXPECT_EQ(run["cwd"], only_run_dir(dir / "runs") + "/steps/single/" + std::string(run["name"]));
    EXPECT_NE(std::find(argv.begin(), argv.end(), "--switches"), argv.end());
  }
  EXPECT_EQ(trials, step["metrics"]["rule_trials"]);
  EXPECT_LE(trials, 40);
  bool table = false;
  for (const auto& e : step["evidence"])
    table |= e["kind"] == "table" && e["name"].get<std::string>().find("rule search trials") == 0;
  EXPECT_TRUE(table) << step["evidence"].dump(1);
  bool finding = false;
  for (const auto& f : step["findings"]) finding |= f["op"] == "GeluFusionPass";
  EXPECT_TRUE(finding) << step["findings"].dump(1);
}

TEST(DiagnosticSteps, SingleOpFailureIsAttributedToAnInductorSwitch) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_OPS: \"aten.a.default,aten.e.default\", STAND_IN_RULE_OPS: "
                                             "\"aten.e.default:pattern_matcher\"") +
                                  "steps:\n  - {id: single, kind: single_op_check, target: {backend: inductor, "
                                  "switches: {inductor_off: [fallback_random]}}}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const nlohmann::json step = report_of(dir)["steps"][0];
  EXPECT_EQ(step["metrics"]["rules"], nlohmann::json{"pattern_matcher"});
  std::string workaround = only_run_dir(dir / "runs") + "/steps/single/rules/switches.json";
  EXPECT_EQ(step["metrics"]["workaround"], workaround);
  EXPECT_NE(step["summary"].get<std::string>().find("caused by Inductor switch pattern_matcher: switching it off fixes "
                                                    "it, switch file " +
                                                    workaround),
            std::string::npos)
      << step["summary"];
  EXPECT_EQ(read_json(workaround), (nlohmann::json{{"inductor_off", {"fallback_random", "pattern_matcher"}}}));
  // The user's own switches stay off in every trial.
  for (const auto& run : step["runs"]) {
    if (std::string(run["name"]).rfind("t", 0) != 0) continue;
    nlohmann::json off = read_json(std::string(run["cwd"]) + "/switches.json")["inductor_off"];
    EXPECT_EQ(off[0], "fallback_random") << off;
  }
}

TEST(DiagnosticSteps, SingleOpFailureNoRuleExplainsSaysSo) {
  TempDir dir;
  write_text(dir / "wf.yaml", rule_workflow("aten.e.default"));
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const nlohmann::json step = report_of(dir)["steps"][0];
  EXPECT_EQ(step["metrics"]["rule_conclusion"], "not_fusion");
  EXPECT_EQ(step["metrics"]["rules"], nlohmann::json::array());
  EXPECT_NE(step["summary"].get<std::string>().find(
                "no switchable rule explains it: it still fails with all 2 rules that fired switched off "
                "(GeluFusionPass, TbeEltwiseFusionPass)"),
            std::string::npos)
      << step["summary"];
}

TEST(DiagnosticSteps, SingleOpCheckCountsSkippedOpsApartAndSaysWhenNoRuleFired) {
  TempDir dir;
  write_text(dir / "wf.yaml",
             stand_in_model("STAND_IN_OPS: \"aten.a.default,aten.b.default,aten.c.default\", STAND_IN_SKIP_OPS: "
                            "aten.b.default, STAND_IN_WRONG_OPS: aten.c.default") +
                 "steps:\n  - {id: single, kind: single_op_check, target: {backend: aot_eager}}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const nlohmann::json step = report_of(dir)["steps"][0];
  EXPECT_EQ(step["metrics"]["checked"], 2);
  EXPECT_EQ(step["metrics"]["skipped"], 1);
  EXPECT_EQ(step["metrics"]["skipped_ops"], nlohmann::json{"aten.b.default"});
  EXPECT_EQ(step["metrics"]["rule_conclusion"], "no_rule_fired");
  std::string summary = step["summary"];
  EXPECT_EQ(summary.rfind("2 ops checked alone in 1 round(s), 1 skipped (random: aten.b.default); wrong in graph "
                          "mode: aten.c.default; no switchable rule explains it: no rule fired",
                          0),
            0u)
      << summary;
}

TEST(DiagnosticSteps, SingleOpCheckPassesWhenEveryOpMatches) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_OPS: \"aten.a.default,aten.b.default,aten.c.default\"") +
                                  "steps:\n  - {id: single, kind: single_op_check}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json step = report_of(dir)["steps"][0];
  EXPECT_EQ(step["metrics"]["ops"], 3);
  EXPECT_EQ(step["metrics"]["rounds"], 1);
  EXPECT_EQ(step["runs"].size(), 4u);  // eager, ops, two batches
  // the plugin's per-op seconds, in the report and the summary (values not asserted)
  EXPECT_EQ(step["metrics"]["compiles"], 3);
  ASSERT_EQ(step["metrics"]["op_times"].size(), 3u);
  for (const auto& row : step["metrics"]["op_times"])
    EXPECT_TRUE(row["compile_s"].is_number() && row["run_s"].is_number()) << row;
  EXPECT_NE(step["summary"].get<std::string>().find("3 compiles, "), std::string::npos) << step["summary"];
  const nlohmann::json& batches = step["metrics"]["batch_times"];
  ASSERT_EQ(batches.size(), 2u) << batches;
  EXPECT_EQ(batches[0]["run"], "batch1-1");
  EXPECT_EQ(batches[0]["ops"].get<int>() + batches[1]["ops"].get<int>(), 3) << batches;
  for (const auto& batch : batches)
    EXPECT_TRUE(batch["seconds"].get<double>() > 0 && batch["ops_s"].is_number()) << batch;
}

TEST(DiagnosticSteps, SingleOpCheckSaysWhichOpsABatchedCompileSettled) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_OPS: \"aten.a.default,aten.b.default,aten.c.default\", "
                                             "STAND_IN_SETTLED_OPS: \"aten.a.default,aten.c.default\"") +
                                  "steps:\n  - {id: single, kind: single_op_check, batches: 1}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json step = report_of(dir)["steps"][0];
  const std::string summary = step["summary"];
  EXPECT_EQ(summary.rfind("3 ops checked as one-op graphs in 1 round(s) (2 settled by 1 batched compile(s), 1 "
                          "compiled alone); every op matches eager; 2 compiles, ",
                          0),
            0u)
      << summary;
  EXPECT_EQ(step["metrics"]["batched_compiles"], 1);
  EXPECT_EQ(step["metrics"]["compiles"], 2);  // b alone, and the batched compile
  EXPECT_EQ(step["metrics"]["op_times"][0]["settled_in_batched_compile"], true);
  EXPECT_EQ(step["metrics"]["op_times"][1]["settled_in_batched_compile"], false);
}

// No pass without looking: an op that could not be checked (here a compile error) counts
// against the floor of every comparing step, min_judged_share; a skipped one does not.
TEST(DiagnosticSteps, SingleOpCheckDoesNotPassBelowTheCoverageFloor) {
  TempDir dir;
  const std::string model = stand_in_model(
      "STAND_IN_OPS: \"aten.a.default,aten.b.default,aten.c.default,aten.d.default\", "
      "STAND_IN_ERROR_OPS: aten.b.default, STAND_IN_SKIP_OPS: aten.d.default");
  write_text(dir / "wf.yaml", model + "steps:\n  - {id: single, kind: single_op_check}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  nlohmann::json report = report_of(dir);
  const nlohmann::json& step = report["steps"][0];
  EXPECT_EQ(step["status"], "error") << r.out << r.err;
  EXPECT_EQ(report["verdict"]["category"], "inconclusive");
  EXPECT_EQ(step["metrics"]["checked"], 2);
  EXPECT_NEAR(step["metrics"]["checked_share"].get<double>(), 2.0 / 3.0, 1e-9);
  EXPECT_NE(step["summary"].get<std::string>().find("; too few ops checked to say that every op matches eager (2 of "
                                                    "3, 66%, min_judged_share is 0.9)"),
            std::string::npos)
      << step["summary"];

  TempDir lower;
  write_text(lower / "wf.yaml", model + "steps:\n  - {id: single, kind: single_op_check, min_judged_share: 0.5}\n");
  r = run_diagnose({"wf.yaml"}, lower.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(report_of(lower)["steps"][0]["status"], "pass");
}

TEST(DiagnosticSteps, DynamoMetaCheckNamesTheMetaOpAndTheDivergingBackends) {
  TempDir dir;
  std::string meta =
      R"('[{"op": "demo::scale", "op_key": "demo::scale#0", "status": "mismatch", "mismatches": [{"output": 0, "field": "dtype", "eager": "torch.float32", "fake": "torch.bfloat16"}]}, {"op": "aten.mm.default", "status": "ok"}]')";
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_META: " + meta +
                                             ", STAND_IN_WRONG_BACKEND: aot_eager, STAND_IN_FAIL_BACKEND: "
                                             "aot_eager_decomp_partition, STAND_IN_BREAKS: \"print(),input()\"") +
                                  "steps:\n  - {id: dynamo, kind: dynamo_meta_check}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  const nlohmann::json& step = report["steps"][0];
  EXPECT_EQ(report["verdict"]["category"], "dynamo_meta_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "demo::scale");
  EXPECT_EQ(step["metrics"]["meta_mismatches"], 1);
  EXPECT_EQ(step["metrics"]["meta_checked"], 2);
  EXPECT_EQ(step["metrics"]["graph_breaks"], 2);
  EXPECT_EQ(step["metrics"]["failed_backends"], (nlohmann::json{"aot_eager", "aot_eager_decomp_partition"}));
  // Every compiled run really used its backend.
  EXPECT_EQ(read_json(only_run_dir(dir / "runs") + "/steps/dynamo/backend-aot_eager/spec.json")["backend"],
            "aot_eager");
}

TEST(DiagnosticSteps, DynamoMetaCheckFailsOnACustomOpSchemaViolation) {
  TempDir dir;
  std::string meta =
      R"('[{"op": "demo.gate.default", "op_key": "demo.gate.default#0", "status": "ok", "schema": "demo::gate(Tensor x) -> Tensor", "violations": [{"check": "schema", "kind": "undeclared mutation", "message": "writes its input `x` in place"}]}]')";
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_META: " + meta) +
                                  "steps:\n  - {id: dynamo, kind: dynamo_meta_check, backends: [aot_eager]}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  const nlohmann::json& step = report["steps"][0];
  EXPECT_EQ(report["verdict"]["category"], "dynamo_meta_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "demo.gate.default");
  EXPECT_EQ(step["metrics"]["schema_violating_ops"], nlohmann::json{"demo.gate.default"});
  EXPECT_EQ(step["metrics"]["custom_ops_checked"], 1);
  EXPECT_NE(step["summary"].get<std::string>().find("custom op demo.gate.default does what its schema does not "
                                                    "declare (undeclared mutation)"),
            std::string::npos)
      << step["summary"];
}

TEST(DiagnosticSteps, DynamoMetaCheckPassesOnAgreement) {
  TempDir dir;
  write_text(dir / "wf.yaml",
             stand_in_model("") + "steps:\n  - {id: dynamo, kind: dynamo_meta_check, backends: [eager]}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(report_of(dir)["steps"][0]["metrics"]["failed_backends"], nlohmann::json::array());
}

// The fullest backend agrees: the others, its first stages, are not run.
TEST(DiagnosticSteps, DynamoMetaCheckRunsTheFullestBackendAloneWhenItAgrees) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model("") + "steps:\n  - {id: dynamo, kind: dynamo_meta_check}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json step = report_of(dir)["steps"][0];
  std::vector<std::string> runs;
  for (const nlohmann::json& run : step["runs"]) runs.push_back(run["name"]);
  EXPECT_EQ(runs, (std::vector<std::string>{"eager", "backend-aot_eager_decomp_partition"}));
  EXPECT_EQ(step["metrics"]["failed_backends"], nlohmann::json::array());
  EXPECT_NE(step["summary"].get<std::string>().find(
                "aot_eager_decomp_partition agrees with eager (eager, aot_eager, its first stages, not run)"),
            std::string::npos)
      << step["summary"];
}

// A listed backend that is no stage of the defaults (inductor, the user's own) may diverge where
// every default agrees: every listed backend runs, the fullest default stage too.
TEST(DiagnosticSteps, DynamoMetaCheckRunsEveryListedBackendWhenOneIsNoStageOfTheDefaults) {
  for (const std::string& listed : {"[inductor]", "[aot_eager, aot_eager_decomp_partition, inductor]"}) {
    TempDir dir;
    write_text(dir / "wf.yaml", stand_in_model("STAND_IN_WRONG_BACKEND: inductor") +
                                    "steps:\n  - {id: dynamo, kind: dynamo_meta_check, backends: " + listed + "}\n");
    Finished r = run_diagnose({"wf.yaml"}, dir.path());
    ASSERT_EQ(r.code, 1) << listed << r.out << r.err;
    const nlohmann::json step = report_of(dir)["steps"][0];
    std::vector<std::string> runs;
    for (const nlohmann::json& run : step["runs"]) runs.push_back(run["name"]);
    std::vector<std::string> expected = {"eager", "backend-inductor"};
    if (listed != "[inductor]")
      expected = {"eager", "backend-aot_eager", "backend-aot_eager_decomp_partition", "backend-inductor"};
    EXPECT_EQ(runs, expected) << listed;
    EXPECT_EQ(step["metrics"]["failed_backends"], nlohmann::json{"inductor"}) << listed;
  }
}

TEST(DiagnosticSteps, EagerDeviceVsCpuComparesTheConfigurationUnderTest) {
  TempDir dir;
  write_text(dir / "wf.yaml",
             stand_in_model("") +
                 "steps:\n  - id: eager\n    kind: eager_device_vs_cpu\n    target: {env: {STAND_IN_SCALE: "
                 "\"1.01\"}}\n    referee: true\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  EXPECT_EQ(report["verdict"]["category"], "eager_device_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "mul-aten.mul.Tensor");
  std::string steps = only_run_dir(dir / "runs") + "/steps/eager/";
  // The CPU side in the target's dtype computes its own float64 truth: no separate referee run.
  nlohmann::json golden = read_json(steps + "golden/spec.json");
  EXPECT_EQ(golden["device"], "cpu");
  EXPECT_FALSE(golden.contains("dtype"));
  EXPECT_EQ(golden["mode"], "eager");
  EXPECT_EQ(golden["dump"]["truth"], true);
  EXPECT_FALSE(boost::filesystem::exists(steps + "referee"));
  // The final outputs are judged beside the ops.
  EXPECT_EQ(report["steps"][0]["metrics"]["final_outputs"]["judged"], 1);
}

TEST(DiagnosticSteps, GraphDumpCompareLocalisesAndTakesExternalDumps) {
  TempDir dir;
  write_text(dir / "wf.yaml",
             stand_in_model("STAND_IN_WRONG_BACKEND: inductor, STAND_IN_NODES: \"g0.mul,g0.add\", "
                            "STAND_IN_CULPRIT_NODES: g0.mul, STAND_IN_GRAPH_NODES: g0.mul") +
                 "steps:\n  - {id: graph, kind: graph_dump_compare, on_failure: continue}\n"
                 "  - id: again\n    kind: graph_dump_compare\n    on_failure: continue\n"
                 "    golden: ${steps.graph.dir}/golden/dump\n    target: ${steps.graph.dir}/golden/dump\n"
                 "  - id: outputs_only\n    kind: graph_dump_compare\n    on_failure: continue\n"
                 "    golden: ${steps.graph.dir}/golden/outputs\n    target: ${steps.graph.dir}/target/outputs\n"
                 "  - id: given_dumps\n    kind: graph_dump_compare\n"
                 "    golden: ${steps.graph.dir}/golden/dump\n    target: ${steps.graph.dir}/target/dump\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  EXPECT_EQ(report["verdict"]["category"], "localized_op_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "mul-aten.mul.Tensor");
  std::string steps = only_run_dir(dir / "runs") + "/steps/graph/";
  EXPECT_EQ(read_json(steps + "golden/spec.json")["dump"]["level"], "fx");
  EXPECT_EQ(read_json(steps + "target/spec.json")["backend"], "inductor");
  EXPECT_EQ(report["steps"][1]["status"], "pass");  // external dumps, no runs
  EXPECT_TRUE(report["steps"][1]["runs"].empty());
  // localized: an op, node or buffer fails; not when nothing fails or only final outputs do
  EXPECT_EQ(report["steps"][0]["metrics"]["localized"], true);
  EXPECT_EQ(report["steps"][1]["metrics"]["localized"], false);
  EXPECT_EQ(report["steps"][2]["status"], "fail");
  EXPECT_EQ(report["steps"][2]["metrics"]["localized"], false);
  // the culprit confirmed by one run with its graph node run eagerly; none for the external dumps
  const nlohmann::json& confirmation = report["verdict"]["confirmation"];
  EXPECT_EQ(confirmation["outcome"], "confirmed");
  EXPECT_EQ(confirmation["runs"], 1);
  EXPECT_EQ(confirmation["graph_nodes"], nlohmann::json{"g0.mul"});
  EXPECT_EQ(read_json(steps + "confirm-1/spec.json")["isolation"]["eager_nodes"], nlohmann::json{"g0.mul"});
  EXPECT_EQ(confirmation["before"]["failed"], 1);
  EXPECT_EQ(confirmation["after"]["failed"], 0);
  EXPECT_EQ(report["steps"][0]["findings"][0]["message"].get<std::string>().rfind("culprit confirmed: with "
                                                                                  "`mul-aten.mul.Tensor` (graph nodes "
                                                                                  "g0.mul) run eagerly",
                                                                                  0),
            0u)
      << report["steps"][0]["findings"][0];
  EXPECT_FALSE(report["steps"][1]["metrics"].contains("confirmation"));
  // dumps given as paths: no run can take the op out, so the first divergence is a candidate, not a culprit
  const nlohmann::json& given = report["steps"][3];
  EXPECT_EQ(given["status"], "fail");
  EXPECT_TRUE(given["runs"].empty());
  EXPECT_EQ(given["metrics"]["category"], "unconfirmed_divergence");
  EXPECT_EQ(given["metrics"]["culprit"], nullptr);
  EXPECT_EQ(given["metrics"]["first_failing_op"], "mul-aten.mul.Tensor");
  EXPECT_NE(given["summary"].get<std::string>().find(
                "the op rows point at `mul-aten.mul.Tensor`, an unconfirmed candidate, not a culprit: the dumps were "
                "given as paths: no run can take the op out to confirm it"),
            std::string::npos)
      << given["summary"];
}

// localisation: modules_first: the module outputs' runs dump with dump.boundaries; a pass there
// is the verdict, judged at module outputs; a failure there is followed by the op-by-op pass,
// which names the same culprit as the op-by-op path alone.
TEST(DiagnosticSteps, GraphDumpCompareModulesFirstPassesAtModuleOutputsOrGoesOpByOp) {
  const std::string step = "steps:\n  - {id: graph, kind: graph_dump_compare, localisation: modules_first}\n";
  TempDir clean;
  write_text(clean / "wf.yaml", stand_in_model("") + step);
  Finished passed = run_diagnose({"wf.yaml"}, clean.path());
  ASSERT_EQ(passed.code, 0) << passed.out << passed.err;
  nlohmann::json graph = report_of(clean)["steps"][0];
  EXPECT_EQ(graph["metrics"]["localisation"], "modules_first");
  EXPECT_EQ(graph["summary"].get<std::string>().rfind("judged at module outputs (", 0), 0u) << graph["summary"];
  std::set<std::string> names;
  for (const nlohmann::json& run : graph["runs"]) names.insert(run["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"golden-modules", "target-modules", "target-undumped"}));
  const std::string steps = only_run_dir(clean / "runs") + "/steps/graph/";
  EXPECT_EQ(read_json(steps + "golden-modules/spec.json")["dump"]["boundaries"], true);
  EXPECT_EQ(read_json(steps + "target-modules/spec.json")["dump"]["boundaries"], true);

  TempDir wrong;
  write_text(wrong / "wf.yaml", stand_in_model("STAND_IN_WRONG_BACKEND: inductor, STAND_IN_NODES: \"g0.mul,g0.add\", "
                                               "STAND_IN_CULPRIT_NODES: g0.mul, STAND_IN_GRAPH_NODES: g0.mul, "
                                               "STAND_IN_LEAVES: layers.1.mlp") +
                                    step);
  Finished failed = run_diagnose({"wf.yaml"}, wrong.path());
  ASSERT_EQ(failed.code, 1) << failed.out << failed.err;
  nlohmann::json report = report_of(wrong);
  EXPECT_EQ(report["verdict"]["culprit"], "mul-aten.mul.Tensor");
  graph = report["steps"][0];
  EXPECT_EQ(graph["metrics"]["module_outputs"]["status"], "fail");
  EXPECT_EQ(graph["findings"][0]["message"].get<std::string>().rfind("module outputs first: they do not all pass", 0),
            0u);
  const std::string fine = only_run_dir(wrong / "runs") + "/steps/graph/";
  EXPECT_FALSE(read_json(fine + "golden/spec.json")["dump"].contains("boundaries"));
  // the op-by-op pass dumps the ops inside the module the failing module output leaves
  EXPECT_EQ(graph["metrics"]["op_pass_scope"], "layers.1.mlp");
  EXPECT_EQ(read_json(fine + "golden/spec.json")["dump"]["include"], nlohmann::json{"^layers\\.1\\.mlp(\\.|$)"});
  EXPECT_EQ(read_json(fine + "target/spec.json")["dump"]["include"], nlohmann::json{"^layers\\.1\\.mlp(\\.|$)"});
  EXPECT_NE(graph["findings"][0]["message"].get<std::string>().find("only the ops inside layers.1.mlp"),
            std::string::npos);
  EXPECT_EQ(read_json(fine + "golden-modules/spec.json")["dump"]["boundaries"], true);
}

// localisation auto (the default): op by op while the compiled run's graph values fit the
// golden's share of the dump budget; module outputs first, saying why, where they would not.
TEST(DiagnosticSteps, GraphDumpCompareLocalisationAutoGoesModulesFirstWhereTheOpDumpWouldNotFit) {
  auto graph_step = [](const std::string& value_bytes) {
    TempDir dir;
    std::string model = stand_in_model("STAND_IN_VALUE_BYTES: " + value_bytes);
    model.replace(model.find("{slots: 2}"), 10, "{slots: 2, dump_budget: 4194304}");
    write_text(dir / "wf.yaml", model + "steps:\n  - {id: graph, kind: graph_dump_compare}\n");
    Finished r = run_diagnose({"wf.yaml"}, dir.path());
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return report_of(dir)["steps"][0];
  };
  auto run_names = [](const nlohmann::json& step) {
    std::set<std::string> names;
    for (const nlohmann::json& run : step["runs"]) names.insert(run["name"].get<std::string>());
    return names;
  };
  nlohmann::json small = graph_step("1000");
  EXPECT_EQ(small["metrics"]["localisation"], "ops");
  EXPECT_EQ(run_names(small), (std::set<std::string>{"golden", "target", "target-undumped"}));
  nlohmann::json large = graph_step("100000000");
  EXPECT_EQ(large["metrics"]["localisation"], "modules_first");
  EXPECT_EQ(run_names(large), (std::set<std::string>{"golden-modules", "target-modules", "target-undumped"}));
  EXPECT_EQ(large["findings"][0]["message"],
            "localisation auto chose module outputs first: the op-by-op dump of "
            "the graph's values, about 95.4 MiB, would not fit the golden's 2.0 MiB share "
            "of the dump budget")
      << large["findings"];
}

TEST(DiagnosticSteps, GraphDumpCompareLocalisationIsOneOfItsWords) {
  TempDir dir;
  write_text(dir / "wf.yaml",
             stand_in_model("") + "steps:\n  - {id: graph, kind: graph_dump_compare, localisation: layers}\n");
  Finished r = run_diagnose({"validate", "wf.yaml"}, dir.path());
  EXPECT_NE(r.code, 0);
  EXPECT_NE((r.out + r.err).find("localisation"), std::string::npos) << r.out << r.err;
}

// A culprit the intervention does not confirm is never named: the step still fails, unlocalised.
nlohmann::json unconfirmed_culprit(const TempDir& dir, const std::string& env) {
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_WRONG_BACKEND: inductor" + env) +
                                  "steps:\n  - {id: graph, kind: graph_dump_compare}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json report = report_of(dir);
  // no localised defect is claimed: the candidates are named unconfirmed, never as the culprit
  EXPECT_EQ(report["verdict"]["category"], "unconfirmed_divergence");
  EXPECT_EQ(report["steps"][0]["metrics"]["category"], "unconfirmed_divergence");
  EXPECT_EQ(report["verdict"]["culprit"], nullptr);
  EXPECT_EQ(report["steps"][0]["metrics"]["localized"], false);
  EXPECT_EQ(report["steps"][0]["metrics"]["culprit"], nullptr);
  const std::string summary = report["verdict"]["summary"];
  EXPECT_EQ(summary.rfind("The compiled graph diverges; no culprit confirmed (step 'graph': ", 0), 0) << summary;
  EXPECT_NE(summary.find("`mul-aten.mul.Tensor`"), std::string::npos) << summary;
  EXPECT_NE(summary.find(", an unconfirmed candidate, not a culprit"), std::string::npos) << summary;
  return report["verdict"]["confirmation"];
}

TEST(DiagnosticSteps, GraphDumpCompareNamesNoCulpritTheInterventionRejects) {
  TempDir dir;
  // the output stays wrong while g0.add is compiled, whatever runs eagerly beside it
  const nlohmann::json confirmation = unconfirmed_culprit(
      dir, ", STAND_IN_NODES: \"g0.mul,g0.add\", STAND_IN_CULPRIT_NODES: g0.add, STAND_IN_GRAPH_NODES: g0.mul");
  EXPECT_EQ(confirmation["outcome"], "rejected");
  EXPECT_EQ(confirmation["runs"], 1);
  EXPECT_EQ(confirmation["after"]["failed"], 1);
}

TEST(DiagnosticSteps, GraphDumpCompareCannotConfirmARecordWithoutGraphNodes) {
  TempDir dir;
  const nlohmann::json confirmation = unconfirmed_culprit(dir, "");
  EXPECT_EQ(confirmation["outcome"], "unconfirmable");
  EXPECT_EQ(confirmation["runs"], 0);
  EXPECT_NE(confirmation["text"].get<std::string>().find("names no Dynamo-graph node (graph_nodes)"), std::string::npos)
      << confirmation;
}

TEST(DiagnosticSteps, CompareSummaryNamesWhereTheSidesDisagreeOnNan) {
  TempDir dir;
  const float golden[3] = {NAN, 1, 2}, target[3] = {0, 1, 2};  // a NaN the target lost
  write_text(dir / "g/out.npy", diagnose::testing::npy_bytes("<f4", "(3,)", golden, sizeof golden));
  write_text(dir / "t/out.npy", diagnose::testing::npy_bytes("<f4", "(3,)", target, sizeof target));
  write_text(dir / "wf.yaml", "model: {argv: [\"true\"]}\nsteps:\n  - {id: c, kind: compare, golden: g, target: t}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string summary = report_of(dir)["steps"][0]["summary"];
  EXPECT_NE(summary.find("golden NaN at 1 of 3 elements, target finite there (first at [0])"), std::string::npos)
      << summary;
}

TEST(DiagnosticSteps, ModelWithoutScriptIsAnErrorNamingTheFix) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model_yaml() + "steps:\n  - {id: graph, kind: graph_dump_compare}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(report_of(dir)["steps"][0]["summary"].get<std::string>().find("give model.script"), std::string::npos);
}

// The stand-in's graph has four nodes; `culprits` must all be compiled for the output to be wrong.
nlohmann::json isolate_nodes(const TempDir& dir, const std::string& env, int expected_code) {
  write_text(dir / "wf.yaml", stand_in_model("STAND_IN_NODES: \"g0.a,g0.mul,g0.add,g0.b\", " + env) +
                                  "steps:\n  - {id: subgraph, kind: subgraph_isolate, confirmations: 1}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  EXPECT_EQ(r.code, expected_code) << r.out << r.err;
  return report_of(dir);
}

TEST(DiagnosticSteps, SubgraphIsolationNamesTheMinimalSubgraphAndItsRepro) {
  TempDir dir;
  nlohmann::json report = isolate_nodes(dir, "STAND_IN_CULPRIT_NODES: \"g0.mul,g0.add\"", 1);
  const nlohmann::json& step = report["steps"][0];
  EXPECT_EQ(report["verdict"]["category"], "subgraph_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "aten.mul+aten.add");
  EXPECT_EQ(step["metrics"]["subgraph"], (nlohmann::json{"g0.mul", "g0.add"}));
  EXPECT_EQ(step["metrics"]["nodes"], 4);
  EXPECT_EQ(step["metrics"]["repro_fails"], true);
  std::string repro = step["metrics"]["repro"];
  EXPECT_EQ(repro, only_run_dir(dir / "runs") + "/steps/subgraph/subgraph-1/repro/repro.py");
  EXPECT_TRUE(boost::filesystem::exists(repro));
  EXPECT_EQ(read_json(only_run_dir(dir / "runs") + "/steps/subgraph/subgraph-1/spec.json")["isolation"],
            (nlohmann::json{{"eager_nodes", {"g0.a", "g0.b"}}, {"repro", true}}));
  // after the bisection's note that the all-on runs agreed bit for bit
  EXPECT_NE(step["findings"].back()["message"].get<std::string>().find("aten.mul (g0.mul, model.py:1) -> aten.add"),
            std::string::npos)
      << step["findings"].dump();
  EXPECT_NE(step["reproduce"].back().get<std::string>().find("repro.py --backend eager"), std::string::npos);
  EXPECT_FALSE(boost::filesystem::exists(only_run_dir(dir / "runs") + "/steps/subgraph/fusion_switch.json"));
}

// Four calls, the first right: the finding says which calls the minimal subgraph fails at, and the
// culprit stays the subgraph's ops.
TEST(DiagnosticSteps, SubgraphIsolationNamesTheCallsItsSubgraphFailsAt) {
  TempDir dir;
  nlohmann::json report = isolate_nodes(
      dir, "STAND_IN_CULPRIT_NODES: \"g0.mul,g0.add\", STAND_IN_CALLS: \"4\", STAND_IN_RIGHT_CALLS: \"0\"", 1);
  EXPECT_EQ(report["verdict"]["culprit"], "aten.mul+aten.add");
  EXPECT_NE(report["steps"][0]["findings"].back()["message"].get<std::string>().find(
                "every other node eager, it fails at calls 2–4; compiling every other node"),
            std::string::npos)
      << report["steps"][0]["findings"].dump();
}

TEST(DiagnosticSteps, SubgraphIsolationWithNothingToIsolateSaysWhy) {
  TempDir passing, always_wrong;
  nlohmann::json report = isolate_nodes(passing, "STAND_IN_CULPRIT_NODES: \"\"", 0);
  EXPECT_EQ(report["steps"][0]["metrics"]["conclusion"], "no_failure");
  report = isolate_nodes(always_wrong, "STAND_IN_WRONG_BACKEND: inductor", 3);
  EXPECT_EQ(report["steps"][0]["metrics"]["conclusion"], "not_fusion");
  EXPECT_NE(report["steps"][0]["summary"].get<std::string>().find("remains with all 4 nodes run eagerly"),
            std::string::npos);
}

}  // namespace
}  // namespace diagnose
