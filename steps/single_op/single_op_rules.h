// Rule attribution of single_op_check's failures: the backend's switchable rules (its fusion
// switch file, or the plugin's named Inductor switches for backend inductor) bisected on the
// failing one-op graphs alone. A trial is one `single-op` process of just those ops with a set
// of rules off, in its own directory (the backend writes fusion_result.json into its working
// directory), judged by the comparison core: its graph results against the eager results it
// computed itself on the same recorded inputs.
#pragma once

#include "steps/layer.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/step.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

// What the single-op check ran: the eager run the ops come from, the target side's spec
// (backend, device, dtype, switches) and the eager side's overrides (its env applies to a trial).
struct SingleOpTarget {
  std::string eager_dir;
  RunSpec spec;
  RunOverrides eager;
};

// The rule search's keys of a single_op_check step (max_trials, confirmations).
struct RuleSearchOptions {
  int max_trials = 0;
  int confirmations = 0;
};

// Bisects the rules on `failing_ops` (trials in the step's directory, the log and bisection.json
// in its rules/; resumed after an interruption) and adds to `result` the findings, evidence
// (trial table, bisection, workaround switch file), reproduce lines and the metrics rules,
// rule_conclusion, workaround, rule_trials. Returns the clause that ends the step's summary:
// "caused by fusion rule X: switching it off fixes it, switch file P", or why no switchable
// rule explains it.
std::string attribute_to_rules(const StepContext& context, const SingleOpTarget& target,
                               const RuleSearchOptions& search, const std::vector<std::string>& failing_ops,
                               StepResult& result);

}  // namespace diagnose
