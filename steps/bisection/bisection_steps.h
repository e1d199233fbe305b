// What the step kinds that run a bisection (fusion_bisect over rules, subgraph_isolate over
// FX nodes) share: their search keys, the golden side that judges the trials, the plan
// resumed from an interrupted invocation's trial log, and the bisection's metrics and evidence.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "orchestrator/bisect/driver.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/workflow/schema.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

// slots, max_trials, crash_is_failure, baseline_repeats, confirmations, with their defaults.
std::vector<Property> bisection_properties();

// A plan kept in `dir`, resuming the trial log saved there when it has this `fingerprint`.
bisect::BisectionPlan resumable_plan(const std::string& dir, const nlohmann::json& fingerprint);
// The search options under the step's keys bisection_properties() declares, at load.
bisect::Options bisection_options(const StepSpec& step, const Workflow& workflow);
// A plan in the step's directory under the step's fingerprint with the search `options`, resuming
// the saved trial log of an earlier invocation of this same step; `also`'s keys join the
// fingerprint (a log kept under others, another knob's, is not resumed).
bisect::BisectionPlan bisection_plan(const StepContext& context, const bisect::Options& options,
                                     const nlohmann::json& also = nlohmann::json::object());

// Trials judged by the comparison core against a golden: `golden` a dump path, a plugin run (an
// eager run whose final outputs, or `judge_ops`' records, carry their float64 truth) or a
// command run of a command model, which joins the plan's first round. Sets setup.judge; a
// golden run that fails stops the bisection (error_from_runs(outcome.alongside) says why).
// Returns an error message ("" when set up).
std::string judge_against_golden(const StepContext& context, const Side& golden, const RunOverrides& target,
                                 const std::vector<std::string>& judge_ops, bisect::TrialSetup& setup,
                                 bisect::BisectionPlan& plan);

// The golden run judge_against_golden asks for, for StepKind::planned_runs: none when `golden`
// is a dump path or the model a command.
std::vector<PlannedRun> planned_golden(const StepContext& context, const Side& golden,
                                       const std::vector<std::string>& judge_ops);

// conclusion, trials, new_trials, replayed_trials, rounds, verified, confidence; the summary.
void record_bisection(const bisect::Result& bisection, StepResult& result);
// The trial table (`configuration_column` names what a trial switched off), bisection.json,
// the trial log.
void add_bisection_evidence(const bisect::Bisection& driver, const bisect::BisectionOutcome& outcome,
                            const std::string& configuration_column, StepResult& result);

}  // namespace diagnose
