#include "steps/bisection/bisection_steps.h"

#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/plugin_run.h"

namespace diagnose {

using bisect::BisectionPlan;
using bisect::JudgeKind;
using bisect::TrialSetup;

std::vector<Property> bisection_properties() {
  return {
      optional("slots", integer_schema("Trials at the same time (default: defaults.slots).", 1)),
      optional("max_trials", defaulted(integer_schema("Trial budget.", 2), bisect::Options{}.max_trials)),
      optional("crash_is_failure",
               defaulted(boolean_schema("A crashing trial counts as a failure."), bisect::Options{}.crash_is_failure)),
      optional("baseline_repeats", defaulted(integer_schema("Extra runs of the all-on configuration.", 0),
                                             bisect::Options{}.baseline_repeats)),
      optional("confirmations",
               defaulted(integer_schema(
                             "Agreeing runs behind each confirmation (one when the all-on runs agree bit for bit).", 1),
                         bisect::Options{}.confirmations)),
  };
}

BisectionPlan resumable_plan(const std::string& dir, const nlohmann::json& fingerprint) {
  BisectionPlan plan;
  plan.dir = dir;
  plan.fingerprint = fingerprint;
  try {
    std::optional<bisect::TrialLog> saved = bisect::read_trial_log(bisect::trial_log_path(plan.dir));
    if (saved && saved->fingerprint == plan.fingerprint) plan.resume = saved;
  } catch (const std::exception&) {
    // unreadable: the bisection starts over
  }
  return plan;
}

bisect::Options bisection_options(const StepSpec& step, const Workflow& workflow) {
  const YAML::Node& node = step.node;
  bisect::Options options;
  options.slots = node["slots"] ? node["slots"].as<int>() : workflow.defaults.slots;
  if (node["max_trials"]) options.max_trials = node["max_trials"].as<int>();
  if (node["crash_is_failure"]) options.crash_is_failure = node["crash_is_failure"].as<bool>();
  if (node["baseline_repeats"]) options.baseline_repeats = node["baseline_repeats"].as<int>();
  if (node["confirmations"]) options.confirmations = node["confirmations"].as<int>();
  return options;
}

BisectionPlan bisection_plan(const StepContext& context, const bisect::Options& options, const nlohmann::json& also) {
  const std::string fingerprint = context.fingerprint() + (also.empty() ? "" : " " + also.dump());
  BisectionPlan plan = resumable_plan(context.step_dir(), fingerprint);
  plan.options = options;
  plan.on_trials = [&context](size_t done, size_t about) { context.search_progress(done, about); };
  return plan;
}

namespace {

// Each golden record carries its float64 truth: a trial fails where it is further from it than
// eager is, so precision loss inside the dtype's tolerances is bisected too.
RunSpec golden_spec(const StepContext& context, const Side& golden, const std::vector<std::string>& judge_ops) {
  RunSpec defaults = spec_of("eager", dump_at(judge_ops.empty() ? "none" : "aten"));
  if (!judge_ops.empty()) defaults.dump->include = judge_ops;
  defaults.dump->truth = true;
  return side_spec(context, golden.run, defaults);
}

}  // namespace

std::vector<PlannedRun> planned_golden(const StepContext& context, const Side& golden,
                                       const std::vector<std::string>& judge_ops) {
  if (golden.path || context.workflow().model.script.empty()) return {};
  return {planned_plugin_run(context, "golden", golden_spec(context, golden, judge_ops), golden.run)};
}

std::string judge_against_golden(const StepContext& context, const Side& golden, const RunOverrides& target,
                                 const std::vector<std::string>& judge_ops, TrialSetup& setup, BisectionPlan& plan) {
  bool plugin = !context.workflow().model.script.empty();
  setup.judge.kind = JudgeKind::Compare;
  setup.judge.tolerances = comparison_settings(context).tolerances;
  setup.judge.ops = judge_ops;
  std::string compared = judge_ops.empty() ? "outputs" : "dump";
  if (golden.path) {
    setup.judge.golden = context.path(*golden.path);
  } else if (plugin) {
    plan.alongside.push_back(plugin_run(context, "golden", golden_spec(context, golden, judge_ops), golden.run));
    setup.judge.golden = plan.alongside.back().dir + "/" + compared;
  } else {
    plan.alongside.push_back(context.model_run("golden", golden.run.command));
    setup.judge.golden =
        golden.run.dump_path ? context.path(*golden.run.dump_path, "golden") : plan.alongside.back().dump_dir;
  }
  setup.judge.dump = plugin ? compared : target.dump_path.value_or("dump");
  plan.check_alongside = [](const std::vector<RunRecord>& records) {
    std::optional<StepResult> golden_error = error_from_runs(records);
    return golden_error ? golden_error->summary : std::string();
  };
  return "";
}

void record_bisection(const bisect::Result& bisection, StepResult& result) {
  result.metrics["conclusion"] = conclusion_name(bisection.conclusion);
  result.metrics["trials"] = bisection.trials.size();
  result.metrics["new_trials"] = bisection.new_trials;
  result.metrics["replayed_trials"] = bisection.replayed_trials;
  result.metrics["rounds"] = bisection.rounds;
  result.metrics["verified"] = bisection.verified;
  result.metrics["confidence"] = bisection.confidence == bisect::Confidence::High ? "high" : "low";
  result.summary = bisection.summary;
}

void add_bisection_evidence(const bisect::Bisection& driver, const bisect::BisectionOutcome& outcome,
                            const std::string& configuration_column, StepResult& result) {
  result.evidence.push_back({"table", "bisection trials", "", trial_table(outcome.result, configuration_column)});
  result.evidence.push_back({"file", "bisection (JSON)", outcome.json_path, nullptr});
  result.evidence.push_back({"file", "trial log", driver.log_path(), nullptr});
}

}  // namespace diagnose
