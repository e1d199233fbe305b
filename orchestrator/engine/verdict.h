// The verdict: which defect the flowchart's steps point to, from their results.
//
// Categories, in the flowchart's order of precedence (the seed's analysis flow):
// a single op wrong when compiled alone as a graph is the prerequisite check; then a
// defect that exists in eager mode on the device; then Dynamo / meta inference; then
// a graph structure or fusion defect with its culprit rule; then a defect localised
// to an op with no fusion cause. A step that errored before any of these was found
// leaves the question open (inconclusive).
#pragma once

#include <string>
#include <vector>

#include "orchestrator/engine/state.h"
#include "orchestrator/workflow/verdict_categories.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

enum ExitCode { kExitNoProblem = 0, kExitProblem = 1, kExitUsage = 2, kExitInfrastructure = 3, kExitInterrupted = 130 };

struct Verdict {
  std::string category;  // a category name, "no_precision_problem" or "inconclusive"
  std::string title;
  std::string summary;  // one line naming the step and the culprit
  std::string step;     // the step that decided, if any
  std::string culprit;  // the op or rule named, if any
  // How the deciding step confirmed its culprit by an intervention run (its metric `confirmation`,
  // steps/judgement/culprit_confirmation.h); null when it ran none.
  nlohmann::json confirmation;
  std::vector<Finding> findings;
  std::vector<Evidence> evidence;
  std::vector<std::string> reproduce;
  std::string advice;
  std::vector<std::string> failed_steps, errored_steps;
  int exit_code = kExitNoProblem;
};

Verdict compute_verdict(const Workflow& workflow, const State& state);
// For `diagnose report`, where only the run directory's copy of the settings is at hand.
Verdict compute_verdict(const std::vector<std::string>& order, const std::map<std::string, std::string>& advice,
                        const State& state);

}  // namespace diagnose
