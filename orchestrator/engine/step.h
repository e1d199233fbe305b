// The interface every step kind implements. A kind is one file in steps/ plus one
// line in steps/kinds/step_kinds.cc; the engine does the rest (conditions, scheduling,
// state, resume, verdict, reports).
#pragma once

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "compare/judge.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/exec/run_request.h"
#include "orchestrator/util/paths.h"
#include "orchestrator/util/strings.h"
#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/schema.h"
#include "orchestrator/workflow/step_kind_declaration.h"
#include "orchestrator/workflow/workflow.h"
#include "runspec/run_spec.h"

namespace diagnose {

// A plugin run a step will ask for, said before any step runs (StepKind::planned_runs).
struct PlannedRun {
  std::string step, name;
  RunSpec spec;
  RunRequest request;  // as planned, in the step's own run directory
};

class SharedRuns;

// Thrown by StepContext::run when Ctrl-C stopped the runs; the engine saves a resumable state.
struct RunsInterrupted : std::runtime_error {
  RunsInterrupted() : std::runtime_error("interrupted") {}
};

// Starts processes for a step: one parallel round, records in request order.
using RunExecutor = std::function<std::vector<RunRecord>(const std::vector<RunRequest>&)>;

// What a step sees while it is evaluated.
// The interpreter of the model's script: model.python, $DIAGNOSE_PYTHON, the python3 beside
// the diagnose binary (the environment a wheel installed it into), else python3 on PATH.
std::string model_python(const Workflow& workflow);

class StepContext {
 public:
  StepContext(const Workflow& workflow, const StepSpec& step, const State& state, std::string run_dir,
              RunExecutor executor, const SharedRuns* shared_runs = nullptr);

  const Workflow& workflow() const { return workflow_; }
  const StepSpec& step() const { return step_; }
  const State& state() const { return state_; }
  const std::string& run_dir() const { return run_dir_; }
  // The invocation's shared runs; null where runs are not shared (`diagnose validate`, a trial's context).
  const SharedRuns* shared_runs() const { return shared_runs_; }
  // Runs the requests in parallel (up to the workflow's slots) and returns when all have
  // ended. May be called any number of times (bisection rounds, re-batching after a crash);
  // request names must be unique within the step. A run that succeeded with the same name
  // and command before an interruption is not started again on --resume.
  std::vector<RunRecord> run(const std::vector<RunRequest>& requests) const { return executor_(requests); }
  // A search's trials done of about how many in all, for the progress ("trial 5 of about 7").
  void search_progress(size_t done, size_t about) const {
    if (search_progress_) search_progress_(done, about);
  }
  void on_search_progress(std::function<void(size_t done, size_t about)> report) {
    search_progress_ = std::move(report);
  }
  std::string step_dir() const;
  // Directory of a run: the step's directory for "main", a subdirectory otherwise.
  std::string run_dir_of(const std::string& run_name) const;

  // Expands ${...}; run_name selects what ${run.*} and ${step.dump_dir} mean.
  // Throws TemplateError.
  std::string expand(const std::string& text, const std::string& run_name = "main") const;
  // A path from the workflow, expanded and made absolute against the workflow's directory.
  std::string path(const std::string& text, const std::string& run_name = "main") const;
  // The model's command with the overrides in `own` (argv/shell/args/env/cwd/timeout/retries/outputs).
  RunRequest model_run(const std::string& run_name, const CommandSpec& own) const;
  // The interpreter of the model's script: model_python(workflow).
  std::string model_python() const;
  // What the step's result depends on (its spec and the workflow's model); --resume keeps a
  // result only under the same fingerprint, and so may a step's own partial work.
  std::string fingerprint() const;
  // The step's options as its kind parsed them at load (StepKindDeclaration::parse); throws
  // std::logic_error when the step holds none of that type.
  template <typename T>
  const T& options() const {
    const T* parsed = dynamic_cast<const T*>(step_.options.get());
    if (!parsed) throw std::logic_error("step " + step_.id + " holds no options of the type its kind parses");
    return *parsed;
  }

 private:
  const Workflow& workflow_;
  const StepSpec& step_;
  const State& state_;
  std::string run_dir_;
  RunExecutor executor_;
  const SharedRuns* shared_runs_;
  std::function<void(size_t, size_t)> search_progress_;
};

// A step kind: its declaration (name, keys, result fields, checks: workflow/step_kind_declaration.h)
// and what a step of the kind does.
class StepKind : public StepKindDeclaration {
 public:
  using StepKindDeclaration::StepKindDeclaration;
  // Verdict category when a step of this kind fails (verdict.h lists them).
  virtual std::string default_category() const { return "precision_problem"; }
  // Does the step's work: the processes it needs through context.run(), then the result.
  // The engine fills in id, kind, category, runs and times. Exceptions make the step an error.
  virtual StepResult evaluate(const StepContext& context) const = 0;
  // The plugin runs evaluate will ask for first, for the engine to share them across steps
  // (shared_runs.h). Throwing (a template naming a result not made yet) plans nothing.
  virtual std::vector<PlannedRun> planned_runs(const StepContext&) const { return {}; }
};

// A step that could not judge: `partial` (what it found so far) as an Error, with the reason.
StepResult error_result(std::string summary, StepResult partial = {});

// For kinds whose runs must all succeed: an Error result naming the runs that did not,
// with their log tails as evidence; nullopt when every run succeeded.
std::optional<StepResult> error_from_runs(const std::vector<RunRecord>& runs);

}  // namespace diagnose
