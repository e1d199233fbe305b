// `subgraph_isolate`: a graph-only defect that neither a fusion rule nor a per-op dump explains,
// localised to the minimal failing subgraph of the FX graphs the backend received. The
// candidates are the graphs' nodes, in graph order; a trial runs the target compiled with some
// nodes run eagerly instead (run spec `isolation.eager_nodes`), one fresh process per trial,
// judged on its final outputs against the golden run — the bisection of fusion_bisect
// (orchestrator/bisect/driver.h) over nodes instead of rules. Each culprit set's span is
// compiled alone once more, and that run writes the standalone repro.py.

#include <algorithm>
#include <functional>
#include <map>

#include "compare/compare.h"
#include "orchestrator/bisect/driver.h"
#include "orchestrator/bisect/subgraph.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "steps/bisection/bisection_knobs.h"
#include "steps/bisection/bisection_steps.h"
#include "steps/bisection/subgraph_culprits.h"
#include "steps/json_text.h"
#include "steps/judgement/call_judgement.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

using bisect::Bisection;
using bisect::BisectionOutcome;
using bisect::Conclusion;
using bisect::Config;
using bisect::CulpritSet;
using bisect::Trial;
using bisect::TrialSetup;

// What status.json's isolation.nodes says about a node.
struct NodeInfo {
  std::string op, module, source;
};

std::map<std::string, NodeInfo> node_infos(const PluginStatus& status) {
  std::map<std::string, NodeInfo> infos;
  for (const IsolatedNode& node : status.isolated_nodes) infos[node.id] = {node.op, node.module, node.source};
  return infos;
}

// The candidates not in `compiled`: a trial's eager_nodes.
Config all_but(const std::vector<std::string>& candidates, const std::vector<std::string>& compiled) {
  Config eager;
  for (const std::string& node : candidates)
    if (std::find(compiled.begin(), compiled.end(), node) == compiled.end()) eager.push_back(node);
  std::sort(eager.begin(), eager.end());
  return eager;
}

// A run of the target with these nodes run eagerly; `repro`: it writes repro/repro.py.
using IsolatedRun = std::function<RunRequest(const std::string& name, const Config& eager, bool repro)>;

// A culprit set's minimal failing subgraph, compiled alone once more to write its repro.py.
struct Subgraph {
  std::vector<std::string> nodes, culprits;
  RunRequest request;
  bisect::TrialOutcome outcome;
  std::string failing_calls;  // "calls 2–4": its final outputs' calls that fail; "" with one call
  std::string repro() const { return request.dir + "/repro/repro.py"; }
};

// The step's keys.
struct SubgraphIsolateOptions : ComparingOptions {
  Side golden;          // a dump's path or a run
  RunOverrides target;  // overrides of the compiled run
  bisect::Options search;
};

class SubgraphIsolateStep : public StepKind {
 public:
  SubgraphIsolateStep()
      : StepKind("subgraph_isolate",
                 "Localise a graph-only defect to the minimal failing subgraph: trials of the target with FX nodes run "
                 "eagerly instead of compiled, each a fresh run judged on its final outputs against the golden run; "
                 "writes a standalone repro.py of that subgraph.") {}
  std::vector<Property> parameters() const override {
    Schema side_run = plugin_side_schema("A run of the model.");
    std::vector<Property> properties = {
        optional("golden", any_of_schema("The reference: a dump path, or a run of the model (default: the model in "
                                         "eager mode, its final outputs with their float64 truth).",
                                         {string_schema("path of an existing dump"), side_run})),
        optional("target", plugin_side_schema("The side under suspicion (default: the model compiled, final outputs "
                                              "only); a trial runs some of its nodes eagerly.")),
        tolerances_property("Tolerance overrides by preset name.", any_schema("preset fields")),
        optional("preset", string_schema("Tolerance preset for every row.")),
    };
    for (const Property& p : bisection_properties()) properties.push_back(p);
    return properties;
  }
  std::vector<std::string> result_fields() const override {
    return {"conclusion",  "culprit", "culprits",   "nodes",           "subgraph", "subgraph_ops", "repro",
            "repro_fails", "trials",  "new_trials", "replayed_trials", "rounds",   "verified",     "confidence"};
  }
  std::string default_category() const override { return "subgraph_defect"; }

  void check(const StepSpec& step, const CheckContext& context, Diagnostics& diagnostics) const override {
    if (context.workflow.model.script.empty())
      diagnostics.error(step.node.Mark(), "steps." + step.id +
                                              ": subgraph_isolate splits the graphs the plugin captures; give "
                                              "model.script");
    YAML::Node dump = step.node["target"] ? step.node["target"]["dump"] : YAML::Node();
    if (dump && dump.IsMap() && dump["level"] && dump["level"].Scalar() != "none")
      diagnostics.error(dump["level"].Mark(), "steps." + step.id +
                                                  ".target.dump.level: must be none (a trial is judged on its final "
                                                  "outputs; the plugin splits graphs only without a per-op dump)");
  }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    auto o = std::make_shared<SubgraphIsolateOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    o->golden = Side::parse(step.node["golden"], diagnostics);
    o->target = RunOverrides::parse(step.node["target"], diagnostics);
    o->search = bisection_options(step, context.workflow);
    return o;
  }

  // The golden run, which an earlier step's run can be (shared_runs.h).
  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    return planned_golden(context, context.options<SubgraphIsolateOptions>().golden, {});
  }

  StepResult evaluate(const StepContext& context) const override {
    const SubgraphIsolateOptions& o = context.options<SubgraphIsolateOptions>();
    const RunOverrides& target = o.target;
    RunSpec target_spec = side_spec(context, target, spec_of("compiled", dump_at("none")));
    std::string model_cwd = context.path(context.workflow().model.command.cwd.value_or("."));
    IsolatedRun isolated_run = [&, target_spec](const std::string& name, const Config& eager, bool repro) {
      RunSpec spec = target_spec;
      spec.isolation.emplace().eager_nodes = eager;
      if (repro) spec.isolation->repro = true;
      RunRequest request = plugin_run(context, name, spec, target);
      request.cwd = request.dir;  // a backend's own files (a fusion report) stay with its trial
      bisect::anchor_relative_paths(request, model_cwd);
      return request;
    };

    TrialSetup setup;
    setup.dir_of = [&](const std::string& name) { return context.run_dir_of(name); };
    setup.execute = [&](const std::vector<RunRequest>& requests) { return context.run(requests); };
    setup.make_request = [&](const Trial& trial) { return isolated_run(trial.name, trial.off, false); };
    setup.knob =
        std::make_shared<FiredReportKnob>("status.json");  // isolation.compiled: the all-on run lists every node

    bisect::BisectionPlan plan = bisection_plan(context, o.search);
    std::string problem = judge_against_golden(context, o.golden, target, {}, setup, plan);
    if (!problem.empty()) return error_result(problem);

    std::vector<std::string> candidates;
    plan.on_candidates = [&](const std::vector<std::string>& listed) { candidates = listed; };
    Bisection driver(setup);
    BisectionOutcome outcome = driver.run(plan);
    switch (outcome.status) {
      case BisectionOutcome::Status::NoRuleFired:
        return error_result(
            "nothing to isolate: the all-compiled run (" + outcome.listing_run + ") left " + outcome.listing_report +
            (outcome.listing_had_no_report ? " (isolation.compiled): the plugin did not split its graphs"
                                           : ": the backend received no FX node"));
      case BisectionOutcome::Status::Failed:
        if (std::optional<StepResult> golden_error = error_from_runs(outcome.alongside)) return *golden_error;
        return error_result(outcome.message);
      case BisectionOutcome::Status::NoCandidates: return error_result("the backend received no FX node");
      case BisectionOutcome::Status::Bisected: break;
    }
    StepResult result;
    add_bisection_evidence(driver, outcome, "eager_nodes", result);
    record_bisection(outcome.result, result);
    return report(context, outcome, candidates, isolated_run, setup, std::move(result));
  }

 private:
  static StepResult report(const StepContext& context, const BisectionOutcome& outcome,
                           const std::vector<std::string>& candidates, const IsolatedRun& isolated_run,
                           const TrialSetup& setup, StepResult result) {
    const bisect::Result& bisection = outcome.result;
    result.metrics["nodes"] = candidates.size();
    result.metrics["culprits"] = bisection.culprits_off();
    for (const std::string& note : bisection.confidence_notes) result.findings.push_back({note, ""});
    for (const std::string& node : bisection.unswitchable)
      result.findings.push_back(
          {"node " + node + " was compiled even when asked to run eagerly: its trials were invalid", node});
    switch (bisection.conclusion) {
      case Conclusion::CulpritsFound: break;
      case Conclusion::NoFailure:
        result.status = StepStatus::Pass;
        result.summary = "no failure to isolate: with all " + std::to_string(candidates.size()) +
                         " nodes compiled the final outputs match the golden";
        return result;
      case Conclusion::NotFusion:
        result.status = StepStatus::Error;
        result.summary = "the failure remains with all " + std::to_string(candidates.size()) +
                         " nodes run eagerly: it does not come from compiling them (a graph break, a guard, or the "
                         "eager split itself differs from eager mode)";
        return result;
      default:
        result.status = StepStatus::Error;
        if (!bisection.unresolved.empty())
          result.findings.push_back({"narrowed to: " + joined(bisection.unresolved, ", "), ""});
        return result;
    }

    std::vector<Subgraph> subgraphs;
    std::vector<RunRequest> requests;
    for (const CulpritSet& set : bisection.culprit_sets) {
      Subgraph subgraph;
      subgraph.culprits = set.rules;
      subgraph.nodes = bisect::subgraph_span(candidates, set.rules);
      subgraph.request =
          isolated_run("subgraph-" + std::to_string(subgraphs.size() + 1), all_but(candidates, subgraph.nodes), true);
      requests.push_back(subgraph.request);
      subgraphs.push_back(std::move(subgraph));
    }
    std::vector<RunRecord> records = context.run(requests);
    bisect::TrialOracle judge(setup, {});
    for (size_t i = 0; i < subgraphs.size(); ++i) {
      Trial trial{requests[i].name, requests[i].dir, "", all_but(candidates, subgraphs[i].nodes)};
      compare::CompareResult compared;
      subgraphs[i].outcome = judge.judge(trial, requests[i], records.at(i), &compared);
      // the calls whose final outputs fail, as the trial's comparison judged them
      if (subgraphs[i].outcome.outcome == bisect::Outcome::Fail)
        subgraphs[i].failing_calls = judge_calls(compared, setup.judge.tolerances).failing_calls_text();
    }
    result.status = StepStatus::Fail;
    describe(context, subgraphs, candidates.size(), result);
    // confirmed: everything compiled but the culprits passes
    result.evidence.push_back({"metric",
                               "workaround: run spec isolation.eager_nodes (these eagerly, the rest compiled)", "",
                               bisection.culprits_off()});
    result.metrics["trials"] = bisection.trials.size() + subgraphs.size();
    return result;
  }

  static void describe(const StepContext& context, const std::vector<Subgraph>& subgraphs, size_t total,
                       StepResult& result) {
    std::vector<SubgraphCulprit> culprits;
    std::vector<std::string> all_nodes, all_ops;
    bool all_fail = true;
    for (const Subgraph& subgraph : subgraphs) {
      std::map<std::string, NodeInfo> infos = node_infos(read_plugin_status(subgraph.request.dir));
      std::vector<std::string> ops, described;
      nlohmann::json table = nlohmann::json::array();
      for (const std::string& id : subgraph.nodes) {
        const NodeInfo& info = infos[id];
        std::string op = info.op.empty() ? id : info.op;
        ops.push_back(op);
        std::vector<std::string> where = {id};
        for (const std::string& known : {info.module, info.source})
          if (!known.empty()) where.push_back(known);
        described.push_back(op + " (" + joined(where, ", ") + ")");
        bool culprit = std::find(subgraph.culprits.begin(), subgraph.culprits.end(), id) != subgraph.culprits.end();
        table.push_back(
            {{"node", id}, {"op", op}, {"module", info.module}, {"source", info.source}, {"culprit", culprit}});
      }
      std::string culprit = joined(ops, "+");
      culprits.push_back({culprit, subgraph.nodes});
      all_nodes.insert(all_nodes.end(), subgraph.nodes.begin(), subgraph.nodes.end());
      all_ops.insert(all_ops.end(), ops.begin(), ops.end());
      std::string or_less =
          subgraph.culprits.size() == 1 ? "" : " (or all of it but " + joined(subgraph.culprits, " or ") + ")";
      result.findings.push_back({"minimal failing subgraph, " + std::to_string(subgraph.nodes.size()) + " of " +
                                     std::to_string(total) + " nodes: " + joined(described, " -> ") +
                                     ". Compiled with the backend, every other node eager, it fails" +
                                     (subgraph.failing_calls.empty() ? "" : " at " + subgraph.failing_calls) +
                                     "; compiling every other node" + or_less + " passes",
                                 culprit});
      bool fails = subgraph.outcome.outcome == bisect::Outcome::Fail;
      all_fail = all_fail && fails;
      if (!fails)
        result.findings.push_back({"compiling only this subgraph did not fail (" +
                                       bisect::outcome_name(subgraph.outcome.outcome) +
                                       (subgraph.outcome.detail.empty() ? "" : ": " + subgraph.outcome.detail) +
                                       "): its repro.py may not reproduce the failure",
                                   culprit});
      result.evidence.push_back({"table", "minimal failing subgraph " + culprit, "", table});
      result.evidence.push_back({"file", "standalone repro of " + culprit, subgraph.repro(), nullptr});
      std::string python = context.model_python();
      std::string dir = subgraph.request.dir + "/repro";
      result.reproduce.push_back("# " + culprit + " alone, standalone: fails with the backend");
      result.reproduce.push_back(reproduce_command(dir, {}, {python, subgraph.repro()}));
      result.reproduce.push_back("# the same with the backend replaced by eager: passes");
      result.reproduce.push_back(reproduce_command(dir, {}, {python, subgraph.repro(), "--backend", "eager"}));
    }
    const std::vector<std::string> named = grouped_culprits(culprits);
    result.metrics["culprit"] = joined(named, ", ");
    result.metrics["subgraph"] = all_nodes;
    result.metrics["subgraph_ops"] = all_ops;
    result.metrics["repro"] = subgraphs.front().repro();
    result.metrics["repro_fails"] = all_fail;
    result.summary = "minimal failing subgraph: " + joined(named, ", ") + " (" + std::to_string(all_nodes.size()) +
                     " of " + std::to_string(total) + " nodes; repro " + subgraphs.front().repro() + ")";
  }
};

}  // namespace

std::unique_ptr<StepKind> make_subgraph_isolate_step() { return std::make_unique<SubgraphIsolateStep>(); }

}  // namespace diagnose
