// Runs of the model shared by the steps of one invocation. A run's identity is what decides its
// result: its run spec without output_dir (an empty switches.inductor_off is no switch) and its
// command as it will start (argv, cwd, env without the engine's per-run variables; a run working
// in its own run directory is the same run whichever directory that is), and its repeat: the
// k-th run of one configuration a step asks for (RunRequest::repeat) is another step's k-th run,
// so that a repeat looking for run-to-run differences is never given the first run again. A step
// that asks for a run an earlier request already made gets that run: its directory, dump,
// outputs and record.
//
// Before the first step runs, each step kind says which plugin runs it will ask for
// (StepKind::planned_runs); runs whose identities differ only in what they dump are merged into
// one whose dump covers every need (merged_needs), and each of them is then asked with that spec.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/step.h"
#include "runspec/run_spec.h"

namespace diagnose {

// What of a run spec decides the run's result (runspec/run_spec.h), as a digest
// (RunRequest::spec_identity).
std::string spec_identity(const RunSpec& spec);
// A digest of the run's identity, as the request will start it; empty for a request without a
// spec identity (not a plugin run: never shared).
std::string run_identity(const RunRequest& request);

// Where an earlier request's run is: the step that made it and its record.
struct SharedRun {
  std::string step;
  RunRecord record;
};

class SharedRuns {
 public:
  // Merges the dump needs of runs that are the same but for them; `runs` in workflow order.
  void plan(const std::vector<PlannedRun>& runs);
  // The spec the planned run `run` is asked with: its group's merged spec, or its own when it was
  // not planned or is no longer what was planned.
  RunSpec spec_for(const PlannedRun& run) const;
  // The directory of a planned run with this identity: where it ran, else where its first
  // planned request will run it; nullopt when it was not planned (a request changed after
  // plugin_run, as a bisection trial's working directory is, must not land in another's).
  std::optional<std::string> dir_for(const std::string& identity) const;
  // A run with this identity that succeeded earlier in this invocation (or the resumed one);
  // the engine gives it only to a request asked in its directory.
  const SharedRun* done(const std::string& identity) const;
  void add_done(const std::string& identity, const std::string& step, const RunRecord& record);

 private:
  struct Group {
    std::string base;  // the identity without dump and checks
    RunSpec spec;
    RunRequest request;  // its first member's
  };
  std::vector<Group> groups_;
  std::map<std::pair<std::string, std::string>, size_t> group_of_;  // (step, run name) -> group
  std::map<std::string, std::string> planned_dirs_;                 // identity -> first member's directory
  std::map<std::string, SharedRun> done_;
};

}  // namespace diagnose
