// Walks a workflow's steps in order: conditions, runs, results, state after every run.
#pragma once

#include <string>

#include "orchestrator/engine/progress.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/exec/runner.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

struct EngineOptions {
  std::string output_dir;  // overrides defaults.output_dir when set
  std::string resume_dir;  // continue this run directory instead of creating one
  int slots = 0;           // overrides defaults.slots when > 0
  RunnerOverride runner;   // --runner, --partition
  std::string run_dir;     // a new, empty run directory made for this run (diagnose check); empty: create one
};

struct EngineOutcome {
  std::string run_dir;
  State state;
  bool interrupted = false;
};

// Throws std::runtime_error when the run directory cannot be created or the state
// to resume cannot be read.
EngineOutcome run_workflow(const Workflow& workflow, const EngineOptions& options, Progress& progress);

// Changes when the step's definition, the model or the defaults change.
std::string step_fingerprint(const Workflow& workflow, const StepSpec& step);

}  // namespace diagnose
