// `graph_dump_compare`: the whole graph, op by op. The target is the model in graph mode
// dumping what the compiled code computes (Inductor's materialised buffers, TorchAir's GE
// dump); the golden is the same graph executed node by node in eager (the FX-level dump,
// whose node names the compiled dump maps back to). Either side may instead be a dump made
// elsewhere (a TorchAir GE dump directory, an FX npy dump), so that an Ascend user can
// bring their own. With `referee: true` the golden run computes every node's float64 truth too
// (shadow execution) and the truth ratio rule judges each row: the graph fails where it is
// further from the truth than eager is. With `localisation: modules_first` both runs first dump
// the module outputs only (dump.boundaries): when those all pass, that is the verdict, judged at
// module outputs; when not, the op-by-op pass follows, dumping only the ops inside the module
// the first failing module output leaves (every op where none says). `auto` (the default) goes
// module outputs first where the golden's op-by-op dump would not fit its dump budget share.
#include "compare/manifest.h"
#include "orchestrator/bisect/trial_oracle.h"
#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "runspec/plugin_status.h"
#include "steps/judgement/confirmed_claims.h"
#include "steps/judgement/culprit_confirmation.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/feature_notes.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

const RunSpec kGolden = spec_of("compiled", dump_at("fx"));
const RunSpec kTarget = spec_of("compiled", dump_at("auto"));
// The compiled run as the user runs it: final outputs only (known_causes' compiled run, shared).
const RunSpec kUndumpedTarget = spec_of("compiled", dump_at("none"));

// The step's keys.
struct GraphDumpCompareOptions : ComparingOptions {
  Side golden, target;
  bool truth_referee = false;   // referee: true, the golden run computes every node's float64 truth
  std::optional<Side> referee;  // a float64 dump, or a separate float64 run
  enum class Localisation { Auto, Ops, ModulesFirst } localisation = Localisation::Auto;
};

// The runs of one pass: the op-by-op pass's names, or the module outputs' pass's; an op-by-op
// pass may dump only the ops inside one module (its path; "": every op).
struct PassRuns {
  const char* golden;
  const char* target;
  bool boundaries;
  std::string scope;
};
const PassRuns kOpsPass{"golden", "target", false, ""};
const PassRuns kModulesPass{"golden-modules", "target-modules", true, ""};

// Where a pass's golden and target dumps are.
struct PassDumps {
  std::string golden, target;
};

Schema side_or_path(const std::string& description) {
  return any_of_schema(description, {string_schema("path of an existing dump (GE dump, FX npy dump, diagnose dump)"),
                                     plugin_side_schema("overrides of the run")});
}

class GraphDumpCompareStep : public StepKind {
 public:
  GraphDumpCompareStep()
      : StepKind("graph_dump_compare",
                 "The full graph op by op: the compiled graph's dump (target) against the same graph run node by node "
                 "in eager (golden, FX level), or dumps made elsewhere; first divergence and the ops where the error "
                 "starts, judged against each record's float64 truth with `referee: true`.") {}
  std::vector<Property> parameters() const override {
    return with_comparison_properties({
        optional("golden", side_or_path("The eager side: a dump path, or overrides of the FX-level run.")),
        optional("target", side_or_path("The graph side: a dump path, or overrides of the compiled run.")),
        optional("referee", any_of_schema("The float64 truth of the golden side.",
                                          {string_schema("true: the golden run also computes every node in float64 "
                                                         "(shadow execution, same records); or the path of a "
                                                         "float64 dump, paired by record identity"),
                                           plugin_side_schema("overrides of a separate float64 run")})),
        optional("localisation",
                 string_schema("auto (default): modules_first where the golden's op-by-op dump, estimated from the "
                               "compiled run's graphs before any dump, would not fit its share of the dump "
                               "budget, else ops; ops: every op of both runs dumped and judged; modules_first: "
                               "the module outputs first (records whose value leaves a module that holds "
                               "modules, such as a decoder layer or its MLP), and the op-by-op pass only where "
                               "one of them does not pass: a clean large model is judged at its module outputs, "
                               "whose tensors fit the dump budget",
                               {"auto", "ops", "modules_first"})),
    });
  }
  std::vector<std::string> result_fields() const override {
    return {"rows",       "compared", "passed",    "failed",     "not_comparable", "first_failing_op",
            "source_ops", "culprit",  "localized", "nan_origin", "category"};
  }
  std::string default_category() const override { return "localized_op_defect"; }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto o = std::make_shared<GraphDumpCompareOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    o->golden = Side::parse(node["golden"], diagnostics);
    o->target = Side::parse(node["target"], diagnostics);
    const YAML::Node referee = node["referee"];
    o->truth_referee = referee && yaml_to_json(referee) == true;
    if (referee && !o->truth_referee && yaml_to_json(referee) != false) o->referee = Side::parse(referee, diagnostics);
    const std::string localisation = node["localisation"] ? node["localisation"].as<std::string>() : "auto";
    if (localisation == "ops") o->localisation = GraphDumpCompareOptions::Localisation::Ops;
    if (localisation == "modules_first") o->localisation = GraphDumpCompareOptions::Localisation::ModulesFirst;
    return o;
  }

  // The target run, which fusion_bisect's all-on trial can be (shared_runs.h), and the golden run:
  // both keep tensors, within the diagnosis's dump budget (dump_budget.h).
  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    const GraphDumpCompareOptions& o = context.options<GraphDumpCompareOptions>();
    const PassRuns& pass =
        modules_first(context, o) && o.localisation == GraphDumpCompareOptions::Localisation::ModulesFirst
            ? kModulesPass
            : kOpsPass;
    std::vector<PlannedRun> planned;
    if (!o.target.path)
      planned.push_back(
          planned_plugin_run(context, pass.target, target_spec(context, o, pass), target_side(context, o)));
    if (dumps_a_recompile(context, o))
      planned.push_back(
          planned_plugin_run(context, "target-undumped", undumped_spec(context, o), undumped_side(context, o)));
    if (!o.golden.path)
      planned.push_back(planned_plugin_run(
          context, pass.golden, side_spec(context, o.golden.run, golden_defaults(context, o, pass)), o.golden.run));
    return planned;
  }

  // With modules_first, the module outputs' pass; its verdict where it passes having judged
  // rows, else the op-by-op pass's, which says what the module outputs showed. With auto, the
  // undumped target runs first (in the standard workflow known_config's compiled run, shared):
  // its graphs' values say what the op-by-op dump would hold.
  StepResult evaluate(const StepContext& context) const override {
    using Localisation = GraphDumpCompareOptions::Localisation;
    const GraphDumpCompareOptions& o = context.options<GraphDumpCompareOptions>();
    if (!modules_first(context, o)) {
      StepResult result = evaluate_pass(context, o, kOpsPass, nullptr);
      if (o.localisation == Localisation::ModulesFirst)
        result.findings.push_back(
            {"localisation: modules_first does not apply here (a side is a dump, the target does not "
             "dump Inductor's buffers, or the referee is a run of its own): judged op by op",
             ""});
      return result;
    }
    std::optional<RunRecord> undumped;
    std::string chosen_because;
    if (o.localisation == Localisation::Auto) {
      std::vector<RunRecord> runs = context.run({undumped_request(context, o)});
      if (std::optional<StepResult> error = error_from_runs(runs)) return *error;
      undumped = runs.front();
      const std::optional<std::string> overflow = op_dump_overflow(context, o, *undumped);
      if (!overflow) {
        StepResult result = evaluate_pass(context, o, kOpsPass, &undumped);
        result.metrics["localisation"] = "ops";
        return result;
      }
      chosen_because = "localisation auto chose module outputs first: " + *overflow;
    }
    PassDumps coarse_dumps;
    StepResult coarse = evaluate_pass(context, o, kModulesPass, &undumped, &coarse_dumps);
    const bool judged = coarse.metrics.value("compared", 0) > 0;
    if (coarse.status == StepStatus::Pass && judged) {
      coarse.metrics["localisation"] = "modules_first";
      if (!chosen_because.empty()) coarse.findings.insert(coarse.findings.begin(), {chosen_because, ""});
      coarse.summary = "judged at module outputs (" + std::to_string(coarse.metrics.value("compared", 0)) + " of " +
                       std::to_string(coarse.metrics.value("rows", 0)) +
                       " rows; the ops inside them were not dumped, every module output passing): " + coarse.summary;
      return coarse;
    }
    PassRuns fine_pass = kOpsPass;
    if (coarse.status == StepStatus::Fail) fine_pass.scope = diverging_module(coarse, coarse_dumps);
    StepResult fine = evaluate_pass(context, o, fine_pass, &undumped);
    fine.metrics["localisation"] = "modules_first";
    fine.metrics["module_outputs"] = {{"status", step_status_name(coarse.status)}, {"summary", coarse.summary}};
    fine.metrics["op_pass_scope"] = fine_pass.scope.empty() ? nlohmann::json() : nlohmann::json(fine_pass.scope);
    const std::string dumped =
        !fine_pass.scope.empty() ? "so only the ops inside " + fine_pass.scope +
                                       ", the module the first failing one leaves, were dumped and judged"
        : judged ? "so every op was dumped and judged (no failing module output names a module it leaves)"
                 : "so every op was dumped and judged";
    fine.findings.insert(fine.findings.begin(), {std::string("module outputs first: ") +
                                                     (judged ? "they do not all pass (" : "none could be judged (") +
                                                     coarse.summary + "), " + dumped,
                                                 ""});
    if (!chosen_because.empty()) fine.findings.insert(fine.findings.begin(), {chosen_because, ""});
    fine.runs.insert(fine.runs.begin(), coarse.runs.begin(), coarse.runs.end());
    return fine;
  }

 private:
  // One pass: its golden and target runs (and the undumped target, run once: `undumped` keeps it
  // for a later pass) judged; the op-by-op pass confirms its culprit.
  StepResult evaluate_pass(const StepContext& context, const GraphDumpCompareOptions& o, const PassRuns& pass,
                           std::optional<RunRecord>* kept_undumped, PassDumps* dumps = nullptr) const {
    std::vector<RunRequest> requests;
    // A side is an existing dump (a path) or a run of the model, whose dump is used.
    auto side = [&](const char* name, const Side& given, const RunSpec& defaults) -> std::string {
      if (given.path) return context.path(*given.path);
      requests.push_back(plugin_run(context, name, side_spec(context, given.run, defaults), given.run));
      return requests.back().dump_dir;
    };
    std::string golden = side(pass.golden, o.golden, golden_defaults(context, o, pass));
    // a compiled run may work in its own run directory: the model's relative paths anchored
    auto compiled = [&](const char* name, const RunSpec& spec, const RunOverrides& overrides) {
      requests.push_back(plugin_run(context, name, spec, overrides));
      bisect::anchor_relative_paths(requests.back(), context.path(context.workflow().model.command.cwd.value_or(".")));
    };
    std::string target;
    if (o.target.path) {
      target = context.path(*o.target.path);
    } else {
      compiled(pass.target, target_spec(context, o, pass), target_side(context, o));
      target = requests.back().dump_dir;
    }
    if (dumps) *dumps = {golden, target};
    const size_t dumped_runs = requests.size();
    const bool undumped_done = kept_undumped && kept_undumped->has_value();
    if (dumps_a_recompile(context, o) && !undumped_done) requests.push_back(undumped_request(context, o));
    std::optional<std::string> referee;
    if (o.referee) {
      RunSpec fp64 = side_spec(context, o.golden.run, kGolden);
      fp64.dtype = "float64";
      fp64.autocast.reset();
      referee = side("referee", *o.referee, fp64);
    }
    std::vector<RunRecord> runs = context.run(requests);
    if (std::optional<StepResult> error = error_from_runs(runs)) return *error;
    std::optional<RunRecord> undumped;
    if (runs.size() > dumped_runs) {
      undumped = runs.back();
      requests.pop_back();
      runs.pop_back();
      if (kept_undumped) *kept_undumped = undumped;
    } else if (undumped_done) {
      undumped = *kept_undumped;
    }

    std::vector<CulpritCandidate> candidates;
    StepResult result = judge_run_dumps(context, requests, runs, golden, target, referee,
                                        "the compiled graph diverges from eager: ", "eager", &candidates);
    if (undumped) judge_undumped_run(context, golden, *undumped, referee, result);
    // false also when nothing could be compared: no op, node or buffer is known to fail
    if (!result.metrics.contains("localized")) result.metrics["localized"] = false;
    if (!pass.boundaries && !o.target.path && !o.golden.path && needs_confirmation(result)) {
      for (size_t i = 0; i < requests.size(); ++i)
        if (requests[i].dump_dir == target) candidates = with_unmapped_producers(candidates, runs[i].dir);
      ConfirmationSides sides{final_outputs_of(golden),
                              undumped ? undumped->dir + "/outputs" : final_outputs_of(target), std::nullopt};
      if (referee && !final_outputs_of(*referee).empty()) sides.referee_outputs = final_outputs_of(*referee);
      const RunSpec spec = undumped_spec(context, o);
      const RunOverrides side = undumped_side(context, o);
      const std::string model_cwd = context.path(context.workflow().model.command.cwd.value_or("."));
      confirm_culprit(
          context, candidates, sides,
          [&](const std::string& name, const CulpritCandidate& candidate) {
            RunSpec isolated = spec;
            isolated.isolation.emplace().eager_nodes = candidate.graph_nodes;
            if (!candidate.forced_writes.empty()) isolated.isolation->eager_writes = candidate.forced_writes;
            if (!candidate.observe.empty()) isolated.isolation->observe = std::vector<std::string>{candidate.observe};
            RunRequest request = plugin_run(context, name, isolated, side);
            request.cwd = request.dir;  // a backend's own files stay with its run
            bisect::anchor_relative_paths(request, model_cwd);
            return request;
          },
          result);
    }
    claim_only_what_is_confirmed(result, why_no_intervention(o, pass));
    note_unavailable_features(runs, result);
    return result;
  }

  // The golden run's defaults: the graph run node by node, with each node's float64 truth under
  // `referee: true` (not for TorchAir's FX golden: TorchAir's own dump computes none, its rows are
  // judged by the dtype presets). Against Inductor's buffers, which have no inputs to pair, its
  // inputs keep statistics only (the comparison reads their input scales and NaN counts).
  static RunSpec golden_defaults(const StepContext& context, const GraphDumpCompareOptions& o, const PassRuns& pass) {
    RunSpec defaults = kGolden;
    if (pass.boundaries) defaults.dump->boundaries = true;
    if (!pass.scope.empty()) defaults.dump->include = std::vector<std::string>{inside_pattern(pass.scope)};
    if (o.truth_referee && side_spec(context, o.golden.run, kGolden).backend != "torchair") defaults.dump->truth = true;
    const RunSpec target = target_spec(context, o);
    if (!o.target.path && resolved_dump_level(target) == "compiled" && target.backend != "torchair")
      defaults.dump->tensor_io = std::vector<std::string>{"output"};
    return defaults;
  }

  static RunSpec target_spec(const StepContext& context, const GraphDumpCompareOptions& o,
                             const PassRuns& pass = kOpsPass) {
    const RunOverrides& overrides = o.target.run;
    RunSpec defaults = kTarget;
    if (pass.boundaries) defaults.dump->boundaries = true;
    if (!pass.scope.empty()) defaults.dump->include = std::vector<std::string>{inside_pattern(pass.scope)};
    if (side_spec(context, overrides, kTarget).backend.value_or("").find(':') != std::string::npos)
      defaults.dump->level = "compiled";  // a user backend: its Inductor buffers, if built on Inductor
    return side_spec(context, overrides, defaults);
  }

  static RunOverrides target_side(const StepContext& context, const GraphDumpCompareOptions& o) {
    return compiled_side(context, o.target.run, target_spec(context, o));
  }

  // Whether the target run is a compile of its own: Inductor dumping its buffers compiles with
  // its FX graph cache off (plugins/pytorch/README.md, "Dump levels"), so a defect on the cache's
  // path — a cached graph reused where it does not apply, pytorch/pytorch#185382 — is not in
  // what it dumps, and the compiled run as the user runs it is judged too.
  static bool dumps_a_recompile(const StepContext& context, const GraphDumpCompareOptions& o) {
    if (o.target.path || o.golden.path) return false;
    const RunSpec target = target_spec(context, o);
    return resolved_dump_level(target) == "compiled" && target.backend != "torchair";
  }

  // Whether the module outputs may go first: not ops, both sides runs, the target dumping
  // Inductor's buffers (whose FX nodes say which module each value leaves), and the truth, if
  // any, the golden's own (a separate referee run would be a third dump of every op).
  static bool modules_first(const StepContext& context, const GraphDumpCompareOptions& o) {
    return o.localisation != GraphDumpCompareOptions::Localisation::Ops && dumps_a_recompile(context, o) && !o.referee;
  }
  // The module the first failing module output leaves (its record's `leaves`, on either side);
  // "" when that row is no module output that leaves one (a final output, a value outside every
  // module), or the dumps cannot be read.
  static std::string diverging_module(const StepResult& coarse, const PassDumps& dumps) {
    const nlohmann::json& first = coarse.metrics.value("first_failing_op", nlohmann::json());
    if (!first.is_string()) return "";
    for (const std::string& dir : {dumps.golden, dumps.target})
      for (const compare::ManifestRecord& record : compare::read_manifest(dir).records)
        if ((record.op_key == first || record.name() == first) && !record.leaves.empty()) return record.leaves;
    return "";
  }

  // dump.include's regex for the records of the ops inside `module` (their module path).
  static std::string inside_pattern(const std::string& module) {
    std::string escaped;
    for (char c : module) {
      if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) escaped += '\\';
      escaped += c;
    }
    return "^" + escaped + "(\\.|$)";
  }

  // Why the golden's op-by-op dump would not fit its share of the dump budget, judged from the
  // undumped compiled run's graphs (the values their nodes compute in one call, each with its
  // float64 truth under `referee: true`); nullopt where it fits, or where nothing says it would not.
  static std::optional<std::string> op_dump_overflow(const StepContext& context, const GraphDumpCompareOptions& o,
                                                     const RunRecord& undumped) {
    RunSpec golden = side_spec(context, o.golden.run, golden_defaults(context, o, kOpsPass));
    apply_dump_share(context.state(), golden);
    const CompileCounts graphs = read_plugin_status(undumped.dir).graphs;
    if (!golden.dump || !golden.dump->max_bytes || !graphs.value_bytes) return std::nullopt;
    const bool truth = golden.dump->truth.value_or(false);
    const int64_t estimate = *graphs.value_bytes + (truth ? 8 * graphs.value_elements.value_or(0) : 0);
    if (estimate <= *golden.dump->max_bytes) return std::nullopt;
    return "the op-by-op dump of the graph's values" + std::string(truth ? " with their float64 truth" : "") +
           ", about " + size_text(estimate) + ", would not fit the golden's " + size_text(*golden.dump->max_bytes) +
           " share of the dump budget";
  }

  RunRequest undumped_request(const StepContext& context, const GraphDumpCompareOptions& o) const {
    RunRequest request = plugin_run(context, "target-undumped", undumped_spec(context, o), undumped_side(context, o));
    bisect::anchor_relative_paths(request, context.path(context.workflow().model.command.cwd.value_or(".")));
    return request;
  }
  static RunSpec undumped_spec(const StepContext& context, const GraphDumpCompareOptions& o) {
    return side_spec(context, o.target.run, kUndumpedTarget);
  }
  static RunOverrides undumped_side(const StepContext& context, const GraphDumpCompareOptions& o) {
    return compiled_side(context, o.target.run, undumped_spec(context, o));
  }

  // Why no intervention run can confirm a pass's culprit: no model to rerun behind a dump given
  // as a path; the module outputs' pass leaves it to the op-by-op pass after it. "" otherwise.
  static std::string why_no_intervention(const GraphDumpCompareOptions& o, const PassRuns& pass) {
    if (o.target.path && o.golden.path) return "the dumps were given as paths";
    if (o.target.path || o.golden.path)
      return std::string("the ") + (o.target.path ? "target's" : "golden's") + " dump was given as a path";
    return pass.boundaries ? "only module outputs were judged (the op-by-op pass after them confirms)" : "";
  }

  // Whether the failure's culprit must be confirmed by an intervention run: the state that
  // differs (state_defect), the op rows that localise it, or that fail only where the outputs
  // contradict them.
  static bool needs_confirmation(const StepResult& result) {
    if (result.metrics.contains("category")) return result.metrics["category"] == "state_defect";
    if (result.status == StepStatus::Fail) return result.metrics["localized"] == true;
    return result.status == StepStatus::Error && result.metrics.contains("suspected_artifacts");
  }

  // The undumped run's final outputs against the golden's: where they fail and the dumped run's
  // passed, the step fails with no op to blame (the dump computed something else).
  static void judge_undumped_run(const StepContext& context, const std::string& golden, const RunRecord& run,
                                 const std::optional<std::string>& referee, StepResult& result) {
    std::optional<std::string> referee_outputs;
    if (referee) referee_outputs = final_outputs_of(*referee);
    if (referee_outputs && referee_outputs->empty()) referee_outputs.reset();
    DumpJudgement undumped = judge_dumps(context, final_outputs_of(golden), run.dir + "/outputs", referee_outputs,
                                         context.step_dir() + "/compare-undumped", "final outputs without the dump");
    result.metrics["undumped_outputs"] = {{"status", step_status_name(undumped.result.status)},
                                          {"summary", undumped.result.summary}};
    result.reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
    for (Evidence& e : undumped.result.evidence) result.evidence.push_back(std::move(e));
    if (undumped.result.status != StepStatus::Fail) return;
    const nlohmann::json dumped = result.metrics.value("final_outputs", nlohmann::json::object());
    if (dumped.value("failed", 0) > 0) {
      result.findings.push_back(
          {"the compiled run as it runs without the dump fails too (" + undumped.result.summary + ")", ""});
      return;
    }
    const std::string text = "the compiled run as it runs without the dump fails (" + undumped.result.summary +
                             ") where the dumping compile, Inductor with its FX graph cache off, computes them right";
    if (result.status == StepStatus::Fail) {
      result.findings.push_back({text, ""});
      return;
    }
    result.status = StepStatus::Fail;
    result.metrics["localized"] = false;
    result.summary = text + ": no op of its dump can be blamed; " + result.summary;
  }
};

}  // namespace

std::unique_ptr<StepKind> make_graph_dump_compare_step() { return std::make_unique<GraphDumpCompareStep>(); }

}  // namespace diagnose
