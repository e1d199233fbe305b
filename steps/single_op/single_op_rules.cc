#include "steps/single_op/single_op_rules.h"

#include <boost/filesystem.hpp>

#include "orchestrator/bisect/driver.h"
#include "orchestrator/exec/command_line.h"
#include "steps/bisection/bisection_knobs.h"
#include "steps/bisection/bisection_steps.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/single_op/single_op_batches.h"

namespace diagnose {

namespace {

// The target's switches with the Inductor switches `off` off too (the user's own stay off).
RunSwitches with_inductor_off(const SingleOpTarget& target, const bisect::Config& off) {
  RunSwitches switches = target.spec.switches.value_or(RunSwitches{});
  std::vector<std::string> all_off = switches.inductor_off.value_or(std::vector<std::string>{});
  all_off.insert(all_off.end(), off.begin(), off.end());
  switches.inductor_off = all_off;
  return switches;
}

// A trial's `single-op` process: the failing ops with `off` switched off, in the trial's directory.
RunRequest trial_request(const StepContext& context, const SingleOpTarget& target, bool inductor,
                         const std::vector<std::string>& ops, const bisect::Trial& trial) {
  RunSwitches switches = target.spec.switches.value_or(RunSwitches{});
  if (inductor)
    switches = with_inductor_off(target, trial.off);
  else
    switches.fusion_switch_file = trial.switch_file;
  const std::string switches_file = write_switches_file(trial.dir, switches);
  RunRequest request = plugin_command(
      context, trial.name, single_op_args(target.eager_dir, trial.dir + "/out", target.spec, switches_file, ops),
      target.eager);
  request.cwd = trial.dir;  // the backend writes fusion_result.json into its working directory
  return request;
}

bisect::BisectionPlan rule_plan(const StepContext& context, const RuleSearchOptions& search,
                                const std::vector<std::string>& ops) {
  bisect::BisectionPlan plan =
      resumable_plan(context.step_dir() + "/rules", {{"step", context.fingerprint()}, {"ops", ops}});
  plan.options.slots = context.workflow().defaults.slots;
  plan.options.max_trials = search.max_trials;
  // A one-op graph on fixed recorded inputs compiles to the same code every time; the repeated
  // all-on trial still catches a nondeterministic backend.
  plan.options.confirmations = plan.options.max_votes = search.confirmations;
  return plan;
}

// The workaround: for Inductor the target's run spec switches with the culprits in
// inductor_off (a `single-op --switches` file as it is), else the fusion switch file the driver
// wrote.
std::string workaround_file(const bisect::BisectionOutcome& outcome, const SingleOpTarget& target,
                            const bisect::Config& culprits, bool inductor, const std::string& dir) {
  return inductor ? write_switches_file(dir, with_inductor_off(target, culprits)) : outcome.workaround_path;
}

std::string culprits_clause(const bisect::Result& bisection, const bisect::Config& culprits, bool inductor,
                            const std::string& workaround) {
  std::string what = inductor ? "Inductor switch" : "fusion rule";
  std::string clause = "caused by " + what + (culprits.size() > 1 ? "es " : " ") + joined(culprits) + ": switching " +
                       (culprits.size() > 1 ? "them" : "it") + " off fixes it";
  if (bisection.culprit_sets.size() == 1 && culprits.size() > 1) clause += " (they fail only together)";
  if (!bisection.verified) clause += " (not confirmed)";
  return clause + ", switch file " + workaround;
}

}  // namespace

std::string attribute_to_rules(const StepContext& context, const SingleOpTarget& target,
                               const RuleSearchOptions& search, const std::vector<std::string>& failing_ops,
                               StepResult& result) {
  bool inductor = target.spec.backend.value_or("inductor") == "inductor";
  std::string ops = joined(failing_ops);
  bisect::TrialSetup setup;
  setup.dir_of = [&](const std::string& name) { return context.run_dir_of(name); };
  setup.execute = [&](const std::vector<RunRequest>& requests) { return context.run(requests); };
  setup.make_request = [&](const bisect::Trial& trial) {
    return trial_request(context, target, inductor, failing_ops, trial);
  };
  setup.knob = std::make_shared<FusionSwitchFileKnob>(inductor ? "out/status.json" : "fusion_result.json");
  setup.judge.kind = bisect::JudgeKind::Compare;
  setup.judge.golden = "out/eager";  // each trial's own eager results
  setup.judge.dump = "out/graph";
  setup.judge.tolerances = comparison_settings(context).tolerances;
  result.metrics["rules"] = nlohmann::json::array();

  bisect::BisectionPlan plan = rule_plan(context, search, failing_ops);
  std::vector<std::string> candidates;
  plan.on_candidates = [&](const std::vector<std::string>& rules) { candidates = rules; };
  bisect::Bisection driver(setup);
  bisect::BisectionOutcome outcome =
      driver.run(plan, {{"knob", inductor ? "inductor" : "fusion_switch_file"}, {"ops", failing_ops}});
  switch (outcome.status) {
    case bisect::BisectionOutcome::Status::NoRuleFired:
      result.metrics["rule_conclusion"] = "no_rule_fired";
      return "no switchable rule explains it: no rule fired on the one-op graph" +
             std::string(failing_ops.size() > 1 ? "s" : "") + " (" + outcome.listing_run + " left " +
             outcome.listing_report + ")";
    case bisect::BisectionOutcome::Status::NoCandidates:
      result.metrics["rule_conclusion"] = "no_rule_fired";
      return "no switchable rule explains it: no candidate rules";
    case bisect::BisectionOutcome::Status::Failed:
      result.metrics["rule_conclusion"] = "error";
      return "the rule search could not start: " + outcome.message;
    case bisect::BisectionOutcome::Status::Bisected: break;
  }

  const bisect::Result& bisection = outcome.result;
  bisect::Config culprits = bisection.culprits_off();
  result.metrics["rule_conclusion"] = conclusion_name(bisection.conclusion);
  result.metrics["rules"] = culprits;
  result.metrics["rule_trials"] = bisection.trials.size();
  result.evidence.push_back({"table", "rule search trials (" + ops + " alone)", "", trial_table(bisection)});
  result.evidence.push_back({"file", "rule search (JSON)", outcome.json_path, nullptr});
  result.evidence.push_back({"file", "rule search trial log", driver.log_path(), nullptr});
  for (const std::string& note : bisection.confidence_notes) result.findings.push_back({note, ""});
  for (const std::string& rule : bisection.unswitchable)
    result.findings.push_back({"rule " + rule + " kept firing when switched off: its trials were invalid", rule});

  switch (bisection.conclusion) {
    case bisect::Conclusion::CulpritsFound: {
      std::string workaround = workaround_file(outcome, target, culprits, inductor, plan.dir);
      result.metrics["workaround"] = workaround;
      result.evidence.push_back({"file", "workaround: switch file turning only the culprits off", workaround, nullptr});
      for (const bisect::CulpritSet& set : bisection.culprit_sets) {
        bool several = set.rules.size() > 1;
        result.findings.push_back({ops + " is wrong alone because of " + (several ? "rules " : "rule ") +
                                       joined(set.rules) + ": with only " + (several ? "them" : "it") +
                                       " switched off it matches eager",
                                   joined(set.rules)});
      }
      RunRequest fixed = driver.replay(culprits);
      result.reproduce.push_back("# " + ops + " alone with the culprit rules off (the workaround)");
      result.reproduce.push_back(reproduce_command(fixed.cwd, fixed.env, fixed.argv));
      return culprits_clause(bisection, culprits, inductor, workaround);
    }
    case bisect::Conclusion::NotFusion:
      return "no switchable rule explains it: it still fails with all " + std::to_string(candidates.size()) +
             " rules that fired switched off (" + joined(candidates) + ")";
    case bisect::Conclusion::NoFailure:
      return "the rule search did not see the failure again: the one-op trials with every rule on passed";
    default: return "the rule search was inconclusive: " + bisection.summary;
  }
}

}  // namespace diagnose
