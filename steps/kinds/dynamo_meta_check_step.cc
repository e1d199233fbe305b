// `dynamo_meta_check`: is the problem in Dynamo / AOT Autograd / an op's meta function?
// Final outputs of eager against backend "eager" (Dynamo only), "aot_eager" (plus AOT
// Autograd and the fake-tensor trace) and "aot_eager_decomp_partition" (plus Inductor's
// decompositions); graph breaks counted and listed; and the plugin's per-op meta check
// (each op of the eager run under FakeTensor, shape/dtype/stride against the real output;
// each custom op also against its schema: undeclared mutation or aliasing of its inputs).
// The backends are stages of one another: the fullest runs first, and the others only when it
// diverges from eager, to tell which stage does (each run traces the model with Dynamo again:
// most of a run's time on a model of many graphs).

#include <algorithm>

#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/util/log_tail.h"
#include "orchestrator/util/strings.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/judgement/dynamo_findings.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

// Each backend runs every stage of the one before it: Dynamo, then AOT Autograd and the fake-tensor
// trace, then Inductor's decompositions.
const std::vector<std::string> kDefaultBackends = {"eager", "aot_eager", "aot_eager_decomp_partition"};

// The listed backend whose stages hold every other listed one's; empty for none (a listed backend
// that is no stage of the defaults, e.g. inductor or the user's own, is run whatever the others show).
std::string fullest_backend(const std::vector<std::string>& backends) {
  for (const std::string& backend : backends)
    if (std::find(kDefaultBackends.begin(), kDefaultBackends.end(), backend) == kDefaultBackends.end()) return "";
  for (auto it = kDefaultBackends.rbegin(); it != kDefaultBackends.rend(); ++it)
    if (std::find(backends.begin(), backends.end(), *it) != backends.end()) return *it;
  return "";
}

// The step's keys.
struct DynamoMetaCheckOptions : ComparingOptions {
  RunOverrides eager, compiled;  // of the eager run, and of every compiled run
  std::vector<std::string> backends = kDefaultBackends;
  bool meta_check = true;
  bool fail_on_graph_breaks = false;
};

// The eager run, which also runs the meta check: that rides on the ATen-level dump, whose
// statistics are enough.
RunSpec meta_eager_spec(const StepContext& context, const DynamoMetaCheckOptions& o) {
  RunSpec defaults = spec_of("eager", dump_at("none"));
  if (o.meta_check) {
    defaults.dump = dump_at("aten");
    defaults.dump->stats_only = true;
    defaults.checks.emplace().meta = true;
  }
  return side_spec(context, o.eager, defaults);
}

class DynamoMetaCheckStep : public StepKind {
 public:
  DynamoMetaCheckStep()
      : StepKind("dynamo_meta_check",
                 "Final outputs of eager against torch.compile with backends eager, aot_eager and "
                 "aot_eager_decomp_partition, graph breaks listed, a per-op meta (FakeTensor) check of shape, dtype "
                 "and stride, and each custom op's schema check (undeclared mutation or aliasing of its inputs); fails "
                 "naming the op whose meta, schema or decomposition is wrong, or the backend that diverges.") {}
  std::vector<Property> parameters() const override {
    return with_comparison_properties({
        optional("eager", plugin_side_schema("Overrides of the eager run (which also runs the meta check).")),
        optional("compiled",
                 plugin_side_schema("Overrides shared by the compiled runs (their backend is set per run).")),
        optional("backends",
                 array_schema("Backends compared with eager (default: eager, aot_eager, "
                              "aot_eager_decomp_partition: stages of one another, the fullest run first and the "
                              "others only when it diverges); with another listed (inductor, module:function) every "
                              "listed backend runs.",
                              string_schema("backend: eager, aot_eager, aot_eager_decomp_partition, inductor, "
                                            "torchair or module:function"))),
        optional("meta_check", defaulted(boolean_schema("Run the per-op meta check."), true)),
        optional("fail_on_graph_breaks", boolean_schema("Graph breaks make the step fail (default: only reported).")),
    });
  }
  std::vector<std::string> result_fields() const override {
    return {"graph_breaks",      "meta_mismatches",      "meta_errors",     "meta_checked", "custom_ops_checked",
            "schema_violations", "schema_violating_ops", "failed_backends", "culprit"};
  }
  std::string default_category() const override { return "dynamo_meta_defect"; }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto o = std::make_shared<DynamoMetaCheckOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    o->eager = RunOverrides::parse(node["eager"], diagnostics);
    o->compiled = RunOverrides::parse(node["compiled"], diagnostics);
    if (node["backends"]) o->backends = node["backends"].as<std::vector<std::string>>();
    o->meta_check = option<bool>(step, "meta_check");
    o->fail_on_graph_breaks = node["fail_on_graph_breaks"] && node["fail_on_graph_breaks"].as<bool>();
    return o;
  }

  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    const DynamoMetaCheckOptions& o = context.options<DynamoMetaCheckOptions>();
    return {planned_plugin_run(context, "eager", meta_eager_spec(context, o), o.eager)};
  }

  StepResult evaluate(const StepContext& context) const override {
    const DynamoMetaCheckOptions& o = context.options<DynamoMetaCheckOptions>();
    std::vector<std::string> backends;
    std::vector<BackendJudgement> judged;
    std::vector<RunRecord> runs = run_eager_and_backends(context, o, backends, judged);
    StepResult result;
    for (const RunRecord& run : runs) result.reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
    if (std::optional<StepResult> error = error_from_runs({runs[0]})) {
      error->reproduce = result.reproduce;
      return *error;
    }
    BackendComparison comparison;
    if (std::optional<StepResult> error = gather_backends(backends, judged, comparison, result)) return *error;
    MetaCheckSummary meta_summary;
    if (o.meta_check) {
      if (std::optional<StepResult> error = read_meta_check(runs[0].dir, meta_summary, result)) return *error;
    }
    conclude(o, backends, comparison, meta_summary, result);
    return result;
  }

 private:
  // One backend's run against eager: what it adds to the step's result.
  struct BackendJudgement {
    bool failed = false;  // the run fails where eager ran, or its final outputs differ
    GraphBreaks breaks;
    StepResult result;                // its findings, evidence and reproduce commands
    std::optional<StepResult> error;  // the run or the comparison could not be judged: ends the step
  };

  // The eager run (with the meta check when asked) and the fullest backend's run, together; when
  // that one fails or diverges, every other backend's run too. `backends`: those run, in the
  // list's order, as `runs` after the eager run; `judged`: each one's run against eager, in the
  // same order (each compared once; none when the eager run failed).
  static std::vector<RunRecord> run_eager_and_backends(const StepContext& context, const DynamoMetaCheckOptions& o,
                                                       std::vector<std::string>& backends,
                                                       std::vector<BackendJudgement>& judged) {
    const std::string fullest = fullest_backend(o.backends);
    backends = fullest.empty() ? o.backends : std::vector<std::string>{fullest};
    std::vector<RunRequest> requests = {plugin_run(context, "eager", meta_eager_spec(context, o), o.eager)};
    for (const std::string& backend : backends) requests.push_back(backend_run(context, o, backend));
    std::vector<RunRecord> runs = context.run(requests);
    if (error_from_runs({runs[0]})) return runs;
    for (size_t i = 1; i < runs.size(); ++i)
      judged.push_back(judge_backend(context, backends[i - 1], runs[0], runs[i]));
    if (backends.size() == o.backends.size() || judged[0].error || !judged[0].failed) return runs;

    std::vector<std::string> others;
    std::vector<RunRequest> more;
    for (const std::string& backend : o.backends)
      if (backend != fullest) {
        others.push_back(backend);
        more.push_back(backend_run(context, o, backend));
      }
    std::vector<RunRecord> more_runs = context.run(more);
    std::vector<RunRecord> all = {runs[0]};
    std::vector<BackendJudgement> all_judged;
    for (const std::string& backend : o.backends) {
      auto other = std::find(others.begin(), others.end(), backend);
      if (other == others.end()) {
        all.push_back(runs[1]);
        all_judged.push_back(std::move(judged[0]));
      } else {
        all.push_back(more_runs[other - others.begin()]);
        all_judged.push_back(judge_backend(context, backend, runs[0], all.back()));
      }
    }
    backends = o.backends;
    judged = std::move(all_judged);
    return all;
  }

  static RunRequest backend_run(const StepContext& context, const DynamoMetaCheckOptions& o,
                                const std::string& backend) {
    RunSpec spec = side_spec(context, o.compiled, spec_of("compiled", dump_at("none")));
    spec.backend = backend;
    return plugin_run(context, "backend-" + backend, spec, o.compiled);
  }

  // What the backends' runs showed against eager.
  struct BackendComparison {
    nlohmann::json failed = nlohmann::json::array();  // the backends that fail or diverge
    long long graph_breaks = 0;                       // the most of any backend's run
  };

  // A backend's run against eager's: a run that fails where eager ran, or final outputs that
  // differ, fail the backend; its graph breaks are read.
  static BackendJudgement judge_backend(const StepContext& context, const std::string& backend, const RunRecord& eager,
                                        const RunRecord& run) {
    BackendJudgement judgement;
    if (run.status == RunStatus::Failed || run.status == RunStatus::Crashed) {
      // Eager ran; the same script failing under this backend is Dynamo/AOT's doing.
      judgement.failed = true;
      judgement.result.findings.push_back(
          {"torch.compile with backend " + backend + " fails where eager runs: " + run.error, ""});
      judgement.result.evidence.push_back(
          {"log", backend + " run (stderr tail)", run.stderr_path, log_tail(run.stderr_path, 40, 1500)});
      return judgement;
    }
    if (run.status != RunStatus::Succeeded) {
      judgement.error = *error_from_runs({run});
      return judgement;
    }
    judgement.breaks = graph_breaks_of(read_plugin_status(run.dir));
    DumpJudgement j = judge_dumps(context, eager.dir + "/outputs", run.dir + "/outputs", std::nullopt,
                                  context.step_dir() + "/compare/" + backend, "eager vs " + backend);
    judgement.result.evidence = j.result.evidence;
    judgement.result.reproduce = j.result.reproduce;
    if (j.result.status == StepStatus::Error) {
      judgement.error = j.result;
    } else if (j.result.status == StepStatus::Fail) {
      judgement.failed = true;
      judgement.result.findings.push_back(
          {"final outputs with backend " + backend + " differ from eager (" + j.result.summary + ")", ""});
    }
    return judgement;
  }

  // The backends' judgements into the step's result, in the list's order: failing backends and
  // graph breaks counted and tabled. An error ends the step.
  static std::optional<StepResult> gather_backends(const std::vector<std::string>& backends,
                                                   const std::vector<BackendJudgement>& judged,
                                                   BackendComparison& comparison, StepResult& result) {
    nlohmann::json break_table = nlohmann::json::array();
    for (size_t i = 0; i < judged.size(); ++i) {
      const BackendJudgement& judgement = judged[i];
      result.evidence.insert(result.evidence.end(), judgement.result.evidence.begin(), judgement.result.evidence.end());
      result.reproduce.insert(result.reproduce.end(), judgement.result.reproduce.begin(),
                              judgement.result.reproduce.end());
      if (judgement.error) {
        StepResult error = *judgement.error;
        error.reproduce = result.reproduce;
        return error;
      }
      result.findings.insert(result.findings.end(), judgement.result.findings.begin(), judgement.result.findings.end());
      if (judgement.failed) comparison.failed.push_back(backends[i]);
      comparison.graph_breaks = std::max(comparison.graph_breaks, judgement.breaks.count);
      for (const std::string& reason : judgement.breaks.reasons)
        break_table.push_back({{"backend", backends[i]}, {"reason", reason}});
    }
    if (!break_table.empty()) result.evidence.push_back({"table", "graph breaks", "", break_table});
    return std::nullopt;
  }

  // The eager run's meta_check.json: its tables as evidence, its findings first.
  static std::optional<StepResult> read_meta_check(const std::string& eager_dir, MetaCheckSummary& meta_summary,
                                                   StepResult& result) {
    std::string path = eager_dir + "/meta_check.json";
    std::optional<std::string> text = read_file(path);
    nlohmann::json document = nlohmann::json::parse(text.value_or(""), nullptr, false);
    try {
      if (!text) throw std::runtime_error("the eager run wrote no " + path);
      meta_summary = summarize_meta_check(document);
    } catch (const std::exception& e) {
      return error_result(std::string("cannot read the meta check: ") + e.what(), std::move(result));
    }
    result.evidence.push_back({"file", "meta check", path, nullptr});
    if (!meta_summary.table.empty()) result.evidence.push_back({"table", "meta mismatches", "", meta_summary.table});
    if (!meta_summary.violation_table.empty())
      result.evidence.push_back({"table", "custom op schema violations", "", meta_summary.violation_table});
    result.findings.insert(result.findings.begin(), meta_summary.findings.begin(), meta_summary.findings.end());
    return std::nullopt;
  }

  // The culprit (the first op whose meta differs or that breaks its schema, else the first
  // failing backend), the metrics, the status and the summary.
  static void conclude(const DynamoMetaCheckOptions& o, const std::vector<std::string>& ran,
                       const BackendComparison& backends, const MetaCheckSummary& meta_summary, StepResult& result) {
    const nlohmann::json& failed_backends = backends.failed;
    std::string first_culprit;
    if (!meta_summary.mismatched_ops.empty())
      first_culprit = meta_summary.mismatched_ops.front();
    else if (!meta_summary.violating_ops.empty())
      first_culprit = meta_summary.violating_ops.front();
    if (first_culprit.empty() && !failed_backends.empty())
      first_culprit = "backend " + failed_backends[0].get<std::string>();

    result.metrics = {{"graph_breaks", backends.graph_breaks},
                      {"meta_checked", meta_summary.ok + meta_summary.mismatched},
                      {"meta_mismatches", meta_summary.mismatched},
                      {"meta_errors", meta_summary.errors},
                      {"custom_ops_checked", meta_summary.custom_ops},
                      {"schema_violations", meta_summary.violation_table.size()},
                      {"schema_violating_ops", meta_summary.violating_ops},
                      {"failed_backends", failed_backends},
                      {"culprit", first_culprit.empty() ? nlohmann::json() : nlohmann::json(first_culprit)}};
    std::vector<std::string> not_run;
    for (const std::string& backend : o.backends)
      if (std::find(ran.begin(), ran.end(), backend) == ran.end()) not_run.push_back(backend);
    std::string counts = not_run.empty()
                             ? std::to_string(o.backends.size()) + " backends against eager"
                             : ran.front() + " agrees with eager (" + joined(not_run) + ", its first stages, not run)";
    counts += ", " + std::to_string(backends.graph_breaks) + " graph break(s)";
    if (o.meta_check)
      counts += ", " + std::to_string(meta_summary.ok + meta_summary.mismatched) + " ops meta-checked, " +
                std::to_string(meta_summary.custom_ops) + " custom op(s) schema-checked";
    std::vector<std::string> problems;
    if (meta_summary.mismatched > 0) problems.push_back("meta differs for " + meta_summary.mismatched_ops.front());
    for (const std::string& op : meta_summary.violating_ops)
      problems.push_back("custom op " + op + " does what its schema does not declare (" +
                         violation_kinds(meta_summary, op) + ")");
    for (const auto& b : failed_backends) problems.push_back(b.get<std::string>() + " diverges");
    if (o.fail_on_graph_breaks && backends.graph_breaks > 0) problems.push_back("graph breaks");
    if (problems.empty()) {
      result.status = StepStatus::Pass;
      result.summary = counts + "; all agree";
    } else {
      result.status = StepStatus::Fail;
      std::string listed;
      for (const std::string& p : problems) listed += (listed.empty() ? "" : ", ") + p;
      result.summary = counts + "; " + listed;
    }
  }
};

}  // namespace

std::unique_ptr<StepKind> make_dynamo_meta_check_step() { return std::make_unique<DynamoMetaCheckStep>(); }

}  // namespace diagnose
