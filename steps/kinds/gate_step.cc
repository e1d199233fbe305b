// `gate`: the CI gate. Runs the model version under test (through the PyTorch plugin) or takes
// its outputs from a path, compares its final outputs, and optionally chosen layers, with a
// stored baseline (orchestrator/ci/baseline.h) by per-dtype tolerances (and the float64 referee
// rule when a referee is given), and fails on any regression. It writes per-output JUnit for CI
// systems, the trend of the outputs across model versions from the history database, and, when
// it fails and names a diagnostic workflow, runs that workflow on the failing version and
// attaches its verdict.
#include <boost/filesystem.hpp>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "compare/compare.h"
#include "compare/json_number.h"
#include "compare/report.h"
#include "orchestrator/ci/baseline.h"
#include "orchestrator/ci/history.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/report/junit.h"
#include "orchestrator/report/markup.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/judgement/nan_origin.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

// "output.0" (a final output by position), "output.logits" (by its path in the return value),
// "mul_1-aten.mul.default output.0" (a layer).
std::string row_name(const json& row, bool final_outputs) {
  std::string name = row.value("op_key", std::string());
  if (!final_outputs) name += " " + row.value("io", std::string());
  if (!final_outputs || name == "output") name += "." + std::to_string(row.value("index", 0));
  long long token = row.value("token_id", 0LL);
  if (token) name += "@step" + std::to_string(token);
  return name;
}

// One JUnit test case per gated output: CI systems show which output regressed.
std::string gate_junit(const std::string& suite, const json& outputs, double seconds) {
  size_t failures = 0;
  for (const json& o : outputs) failures += !o.value("passed", true);
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"diagnose gate\" tests=\"" << outputs.size()
      << "\" failures=\"" << failures << "\" errors=\"0\">\n  <testsuite name=\"" << markup_escape(suite)
      << "\" tests=\"" << outputs.size() << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\" time=\""
      << seconds << "\">\n";
  for (const json& o : outputs) {
    out << "    <testcase classname=\"" << markup_escape(suite) << "\" name=\"" << markup_escape(o.value("output", ""))
        << "\" time=\"0\">";
    if (!o.value("passed", true))
      out << "\n      <failure type=\"precision_regression\" message=\"" << markup_escape(o.value("reason", ""))
          << "\">cosine similarity " << compare::number_from_json(o.value("cosine_similarity", json()))
          << ", relative L2 " << compare::number_from_json(o.value("relative_l2", json())) << ", max relative error "
          << compare::number_from_json(o.value("max_relative_error", json())) << " ("
          << markup_escape(o.value("judged_by", "")) << ")</failure>\n    ";
    out << "</testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

// The step's keys; the schema below declares them.
struct GateOptions : ComparingOptions {
  std::vector<std::string> layers;               // regexes of the ops dumped and compared; empty: outputs only
  std::string model_version, baseline;           // templates, expanded when the step runs
  Side target;                                   // a dump's path or overrides of the compiled run
  std::optional<Side> referee;                   // a float64 dump's path or run overrides; absent: none
  std::optional<std::string> diagnose_workflow;  // run on a regression
  bool history = true;
};

class GateStep : public StepKind {
 public:
  GateStep()
      : StepKind("gate",
                 "CI gate: run the model version under test and compare its final outputs (and chosen layers) with a "
                 "stored baseline by per-dtype tolerances; fails on a regression, optionally running a diagnostic "
                 "workflow on the failing version.") {}
  std::vector<Property> parameters() const override {
    return {
        optional("baseline", string_schema("The baseline directory (diagnose baseline save). Default: "
                                           "${env.DIAGNOSE_BASELINE}, which `diagnose gate --baseline` sets.")),
        optional("target", any_of_schema("The version under test: a run of the model's script (plugin side keys; "
                                         "default graph mode) or the path of a plugin run / outputs dump.",
                                         {string_schema("path of a plugin run directory or a diagnose dump"),
                                          plugin_side_schema("a run of the model through the PyTorch plugin")})),
        optional("referee", any_of_schema("A float64 run (or its path) for the referee rule: a row that fails still "
                                          "passes when the target is no further from float64 than the baseline.",
                                          {string_schema("path of a plugin run directory or a diagnose dump"),
                                           plugin_side_schema("a run of the model through the PyTorch plugin")})),
        optional("layers", array_schema("Also gate the op records whose op_key matches one of these regular "
                                        "expressions (needs an op dump in the baseline).",
                                        string_schema("regular expression"))),
        tolerances_property("Tolerance overrides for this gate, by preset name (fp32, fp16...).",
                            any_schema("fields of one preset: atol, rtol, min_cosine...")),
        optional("preset", string_schema("Use this tolerance preset for every output instead of choosing by dtype.")),
        optional("model_version", string_schema("The version under test, recorded in the history. Default: "
                                                "${env.DIAGNOSE_MODEL_VERSION}, else unknown.")),
        optional("diagnose_workflow", string_schema("A diagnostic workflow run on the failing version when the gate "
                                                    "fails; its verdict is attached.")),
        optional("history", defaulted(boolean_schema("Draw the outputs' trend from the history database."), true))};
  }
  std::vector<std::string> result_fields() const override {
    return {"outputs_compared",
            "passed",
            "failed",
            "model_version",
            "baseline_model_version",
            "worst_relative_l2",
            "diagnosis_verdict",
            "baseline_problem",
            "nan_origin"};
  }
  std::string default_category() const override { return "precision_problem"; }

  void check(const StepSpec& step, const CheckContext&, Diagnostics& diagnostics) const override {
    check_regexes(step.node["layers"], "steps." + step.id + ".layers", diagnostics);
  }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto text = [&](const char* key, const char* otherwise) {
      return node[key] ? node[key].Scalar() : std::string(otherwise);
    };
    auto o = std::make_shared<GateOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    if (node["layers"])
      for (const auto& layer : node["layers"]) o->layers.push_back(layer.Scalar());
    o->model_version = text("model_version", "${env.DIAGNOSE_MODEL_VERSION}");
    o->baseline = text("baseline", "${env.DIAGNOSE_BASELINE}");
    o->target = Side::parse(node["target"], diagnostics);
    if (node["referee"]) o->referee = Side::parse(node["referee"], diagnostics);
    if (node["diagnose_workflow"]) o->diagnose_workflow = node["diagnose_workflow"].Scalar();
    o->history = option<bool>(step, "history");
    return o;
  }

  StepResult evaluate(const StepContext& context) const override {
    const GateOptions& o = context.options<GateOptions>();
    StepResult result;
    std::string model_version = context.expand(o.model_version);
    if (model_version.empty()) model_version = "unknown";
    result.metrics["model_version"] = model_version;
    GateBaseline baseline;
    if (std::optional<StepResult> problem = open_baseline(context, o, baseline, result)) return *problem;
    SideDirs sides;
    if (std::optional<StepResult> error = run_sides(context, o, sides, result)) return *error;
    if (baseline.missing)
      return baseline_problem(
          result, "no baseline at " + baseline.dir +
                      "; to accept this version's outputs as the baseline: diagnose baseline save " +
                      shell_quote(context.run_dir()) + " --run " + shell_quote(context.step().id + "/target") +
                      " --to " + shell_quote(baseline.dir));
    result.metrics["baseline_model_version"] = baseline.loaded.metadata.value("model_version", "unknown");

    const std::string out_dir = context.step_dir() + "/gate";
    fs::create_directories(out_dir);
    json outputs = json::array();
    const std::string compare_error =
        compare_with_baseline(context, o, baseline.loaded, sides, out_dir, outputs, result);
    if (!compare_error.empty())
      return error_result("cannot compare with the baseline: " + compare_error, std::move(result));

    const size_t failed = judge_outputs(context, outputs, model_version, baseline.loaded, out_dir, result);
    if (!o.layers.empty()) report_nan_origins(baseline.loaded.dump_dir(), sides.target + "/dump", result, "baseline");
    if (o.history) record_trend(context, result, out_dir);
    if (failed && o.diagnose_workflow)
      diagnose(context, *o.diagnose_workflow, result, model_version, sides.target, baseline.loaded.dir);
    return result;
  }

 private:
  struct GateBaseline {
    std::string dir;       // absolute
    bool missing = false;  // no directory there
    Baseline loaded;       // when not missing
  };
  // Where the target's and the referee's outputs are (the referee's empty when there is none).
  struct SideDirs {
    std::string target, referee;
  };

  // The baseline the step names, loaded. A damaged baseline stops the gate before anything runs;
  // a missing one only after the model ran, so that this run's outputs can become the baseline.
  static std::optional<StepResult> open_baseline(const StepContext& context, const GateOptions& o,
                                                 GateBaseline& baseline, StepResult& result) {
    baseline.dir = context.expand(o.baseline);
    if (baseline.dir.empty())
      return baseline_problem(result,
                              "no baseline given: set the step's baseline: or run 'diagnose gate --baseline DIR'");
    baseline.dir = absolute_path(baseline.dir, context.workflow().dir);
    baseline.missing = !fs::exists(baseline.dir);
    if (baseline.missing) return std::nullopt;
    try {
      baseline.loaded = load_baseline(baseline.dir);
    } catch (const std::exception& e) {
      return baseline_problem(result, e.what());
    }
    return std::nullopt;
  }

  // The target and the referee: the dumps given, or runs of the model (their reproduce commands
  // added to `result`).
  static std::optional<StepResult> run_sides(const StepContext& context, const GateOptions& o, SideDirs& sides,
                                             StepResult& result) {
    std::vector<RunRequest> requests;
    auto side_dir = [&](const char* side, const Side& given, const RunSpec& defaults) -> std::string {
      if (given.path) return context.path(*given.path);
      RunRequest request = plugin_run(context, side, side_spec(context, given.run, defaults), given.run);
      requests.push_back(request);
      return request.dir;
    };
    DumpRequest dump = dump_at(o.layers.empty() ? "none" : "auto");
    if (!o.layers.empty()) dump.include = o.layers;
    RunSpec referee = spec_of("eager", dump);
    referee.dtype = "float64";
    try {
      sides.target = side_dir("target", o.target, spec_of("compiled", dump));
      if (o.referee) sides.referee = side_dir("referee", *o.referee, referee);
    } catch (const std::exception& e) {
      return error_result(e.what(), std::move(result));
    }
    std::vector<RunRecord> runs = context.run(requests);
    for (const RunRecord& run : runs) result.reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
    if (std::optional<StepResult> error = error_from_runs(runs)) {
      error->reproduce = result.reproduce;
      return error;
    }
    return std::nullopt;
  }

  // The final outputs, then the layers when the step names some, compared with the baseline's
  // into `outputs`; what stopped a comparison, else "".
  static std::string compare_with_baseline(const StepContext& context, const GateOptions& o, const Baseline& baseline,
                                           const SideDirs& sides, const std::string& out_dir, json& outputs,
                                           StepResult& result) {
    auto outputs_of = [](const std::string& dir) {
      return fs::is_directory(dir + "/outputs") ? dir + "/outputs" : dir;
    };
    std::string compare_error;
    auto gate = [&](const std::string& golden, const std::string& mine, const std::string& referee,
                    const std::string& label, bool final_outputs) {
      RecordedComparison record = compare_and_record(
          context, golden, mine, referee.empty() ? std::nullopt : std::optional<std::string>(referee),
          out_dir + "/" + label, label);
      if (!record.error.empty()) {
        compare_error = label + ": " + record.error;
        return;
      }
      for (Evidence& e : record.evidence) result.evidence.push_back(std::move(e));
      result.reproduce.push_back(record.reproduce);
      add_output_rows(record.document, o.layers, final_outputs, outputs);
    };
    gate(baseline.outputs_dir(), outputs_of(sides.target), sides.referee.empty() ? "" : outputs_of(sides.referee),
         "outputs", true);
    if (o.layers.empty() || !compare_error.empty()) return compare_error;
    if (!baseline.has_dump()) return "layers: the baseline has no op dump (save it from a run that dumped the layers)";
    gate(baseline.dump_dir(), sides.target + "/dump", sides.referee.empty() ? "" : sides.referee + "/dump", "layers",
         false);
    return compare_error;
  }

  // The step's status and summary from the outputs, with their JUnit and the baseline as
  // evidence; returns how many regressed.
  static size_t judge_outputs(const StepContext& context, const json& outputs, const std::string& model_version,
                              const Baseline& baseline, const std::string& out_dir, StepResult& result) {
    const size_t failed = record_outputs(outputs, result);
    write_file_atomically(out_dir + "/junit.xml", gate_junit("gate." + context.workflow().name, outputs, 0));
    result.evidence.push_back({"file", "gate JUnit (one test case per output)", out_dir + "/junit.xml", nullptr});
    result.evidence.push_back({"file", "baseline", baseline.dir + "/baseline.json", nullptr});

    std::string versions =
        "model " + model_version + " against baseline " + result.metrics["baseline_model_version"].get<std::string>();
    if (failed == 0) {
      result.status = StepStatus::Pass;
      result.summary =
          std::to_string(outputs.size()) + " output(s) within tolerance of the baseline (" + versions + ")";
    } else {
      result.status = StepStatus::Fail;
      result.summary =
          std::to_string(failed) + " of " + std::to_string(outputs.size()) + " output(s) regressed (" + versions + ")";
    }
    return failed;
  }

  // The compared rows of `document` as the gate's outputs (op rows: only the layers'), with the
  // rows the comparison could not judge (uninitialised memory) left out.
  static void add_output_rows(const json& document, const std::vector<std::string>& layers, bool final_outputs,
                              json& outputs) {
    for (const json& group : document.value("groups", json::array()))
      for (const json& row : group.value("rows", json::array())) {
        std::string op = row.value("op_key", std::string());
        if (!final_outputs) {
          bool chosen = false;
          for (const std::string& layer : layers) chosen = chosen || std::regex_search(op, std::regex(layer));
          if (!chosen) continue;
        }
        std::string verdict = row.value("verdict", std::string());
        if (verdict == compare::verdict_name(compare::Verdict::NotJudged)) continue;  // uninitialised memory
        std::string reason = row.value("cmp_fail_reason", std::string());
        if (verdict == "not_comparable" && reason.empty()) reason = "not comparable";
        outputs.push_back(
            {{"output", row_name(row, final_outputs)},
             {"dtype", row.value("my_dtype", json())},
             {"cosine_similarity",
              compare::json_number_or_null(compare::number_from_json(row.value("cosine_unrounded", json())))},
             {"relative_l2", compare::json_number_or_null(
                                 compare::number_from_json(row.value("relative_euclidean_distance", json())))},
             {"max_relative_error",
              compare::json_number_or_null(compare::number_from_json(row.value("max_relative_error", json())))},
             {"max_absolute_error",
              compare::json_number_or_null(compare::number_from_json(row.value("max_absolute_error", json())))},
             {"judged_by", row.value("judged_by", json())},
             {"reason", reason},
             {"passed", verdict == "pass"}});
      }
  }

  // The outputs' metrics (outputs, passed, failed, worst_relative_l2), a finding for each that
  // regressed and their table; returns how many regressed.
  static size_t record_outputs(const json& outputs, StepResult& result) {
    size_t failed = 0;
    double worst = 0;
    for (const json& o : outputs) {
      failed += !o.value("passed", true);
      double l2 = compare::number_from_json(o.value("relative_l2", json()));
      if (!std::isnan(l2)) worst = std::max(worst, l2);
      if (!o.value("passed", true))
        result.findings.push_back({"regression in " + o.value("output", "") + ": cosine " +
                                       (o["cosine_similarity"].is_null() ? "n/a" : o["cosine_similarity"].dump()) +
                                       ", relative L2 " +
                                       (o["relative_l2"].is_null() ? "n/a" : o["relative_l2"].dump()) +
                                       (o.value("reason", "").empty() ? "" : " (" + o.value("reason", "") + ")"),
                                   o.value("output", "")});
    }
    result.metrics["outputs"] = outputs;
    result.metrics["outputs_compared"] = outputs.size();
    result.metrics["passed"] = outputs.size() - failed;
    result.metrics["failed"] = failed;
    result.metrics["worst_relative_l2"] = worst;
    json table = json::array();
    for (const json& o : outputs)
      table.push_back({{"output", o["output"]},
                       {"dtype", o["dtype"]},
                       {"verdict", o.value("passed", true) ? "pass" : "fail"},
                       {"cosine", o["cosine_similarity"]},
                       {"relative L2", o["relative_l2"]},
                       {"max relative", o["max_relative_error"]},
                       {"max abs", o["max_absolute_error"]},
                       {"judged by", o["judged_by"]}});
    result.evidence.push_back({"table", "outputs against the baseline", "", table});
    return failed;
  }

  static StepResult baseline_problem(StepResult& result, const std::string& message) {
    result.metrics["baseline_problem"] = message;
    return error_result(message, std::move(result));
  }

  // The trend of this workflow's worst output across earlier runs, plus this one.
  static void record_trend(const StepContext& context, StepResult& result, const std::string& out_dir) {
    std::string database = history_path(fs::path(context.run_dir()).parent_path().string());
    std::vector<TrendPoint> points;
    try {
      points = History(database).trend("", context.workflow().name);
    } catch (const std::exception& e) {
      result.findings.push_back({std::string("history unavailable: ") + e.what(), ""});
    }
    TrendPoint now;
    now.run_dir = context.run_dir();
    now.model_version = result.metrics["model_version"].get<std::string>();
    for (const json& o : result.metrics["outputs"]) {
      double l2 = compare::number_from_json(o.value("relative_l2", json()));
      bool take = now.metrics.output.empty() || (now.metrics.passed && !o.value("passed", true)) ||
                  (now.metrics.passed == o.value("passed", true) && l2 > now.metrics.relative_l2);
      if (!take) continue;
      now.metrics.output = o.value("output", "");
      now.metrics.cosine_similarity = compare::number_from_json(o.value("cosine_similarity", json()));
      now.metrics.relative_l2 = l2;
      now.metrics.max_relative_error = compare::number_from_json(o.value("max_relative_error", json()));
      now.metrics.max_absolute_error = compare::number_from_json(o.value("max_absolute_error", json()));
      now.metrics.passed = o.value("passed", true);
    }
    points.push_back(now);
    write_file_atomically(out_dir + "/trend.json", trend_json(points, "", database).dump(2) + "\n");
  }

  // Runs the diagnostic workflow on the failing version (a fresh diagnose process with this
  // process's environment; it finds the failing run in $DIAGNOSE_GATE_TARGET and the baseline
  // in $DIAGNOSE_BASELINE) and attaches its verdict.
  static void diagnose(const StepContext& context, const std::string& diagnose_workflow, StepResult& result,
                       const std::string& model_version, const std::string& target_dir,
                       const std::string& baseline_dir) {
    std::string workflow = context.path(diagnose_workflow);
    RunRequest request;
    request.name = "diagnosis";
    request.dir = context.run_dir_of("diagnosis");
    std::string output_dir = request.dir + "/runs";
    request.argv = {self_executable(), "run", workflow, "--output-dir", output_dir, "--quiet"};
    request.cwd = fs::path(workflow).parent_path().string();
    request.env = {{"DIAGNOSE_MODEL_VERSION", model_version},
                   {"DIAGNOSE_GATE_TARGET", target_dir},
                   {"DIAGNOSE_BASELINE", baseline_dir}};
    request.timeout_s = context.workflow().defaults.timeout_s;
    fs::create_directories(request.dir);
    RunRecord run = context.run({request}).front();
    result.reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
    json report;
    boost::system::error_code ec;
    for (fs::directory_iterator it(output_dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::ifstream in((it->path() / "report.json").string());
      if (!in) continue;
      report = json::parse(in, nullptr, false);
      if (!report.is_object()) continue;
      result.evidence.push_back({"file", "diagnosis report (HTML)", (it->path() / "report.html").string(), nullptr});
      result.evidence.push_back({"file", "diagnosis report (JSON)", (it->path() / "report.json").string(), nullptr});
      break;
    }
    if (!report.is_object() || !report.contains("verdict")) {
      result.findings.push_back({"the diagnostic workflow " + workflow + " gave no verdict (" +
                                     run_status_name(run.status) + (run.error.empty() ? "" : ": " + run.error) + ")",
                                 ""});
      return;
    }
    const json& verdict = report["verdict"];
    result.metrics["diagnosis_verdict"] = verdict.value("category", "");
    result.findings.push_back(
        {"diagnosis (" + fs::path(workflow).filename().string() + "): " + verdict.value("summary", ""),
         verdict.value("culprit", "")});
    result.summary += "; diagnosis: " + verdict.value("title", std::string());
  }
};

}  // namespace

std::unique_ptr<StepKind> make_gate_step() { return std::make_unique<GateStep>(); }

}  // namespace diagnose
