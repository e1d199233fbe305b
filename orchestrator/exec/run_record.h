// How one run of a process went: what started, how it ended, where its logs are. The engine
// keeps these in state.json (engine/state.h) and resumes from them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/exec/run_request.h"

namespace diagnose {

enum class RunStatus {
  Pending,  // not started, or started by an engine that died
  Running,
  Succeeded,  // exit status 0 and declared outputs present
  Failed,     // non-zero exit status
  Crashed,    // killed by a signal it did not get from us
  TimedOut,
  Interrupted,  // stopped by Ctrl-C
  NotStarted,   // could not be started (no such program, bad directory)
  MissingOutputs,
};
std::string run_status_name(RunStatus s);
RunStatus run_status_from_name(const std::string& name);
// A finished run whose result stands (resume does not repeat it).
bool run_complete(RunStatus s);

// How a process ended, as the process layer reports it (ProcessOutcome, subprocess.h) and every
// run record carries it.
struct ProcessEnd {
  RunStatus status = RunStatus::Pending;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string error;  // why it did not succeed, in words
};

// How a run ended, as the engine records it (RunRecord) and the report shows it (ReportedRun).
struct RunEnding : ProcessEnd {
  std::string stdout_path, stderr_path;
  int attempts = 0;
  // How a local run's last attempt started, "warm_fork" or "process" (warm_launcher.h), and why.
  std::string launch, launch_reason;
  // A run made for another request (shared_runs.h): the step and run that made it; empty otherwise.
  std::string from_step, from_run;
};

struct RunRecord : RunCommand, RunEnding {
  double started = 0, finished = 0;  // seconds since the epoch
  std::string job_id;                // the Slurm job of the last attempt; empty for local runs
  std::string identity;              // a plugin run's (shared_runs.h)
  int ranks = 1;                     // > 1: the run's processes, one per rank (runner.ranks), each with its logs
};

nlohmann::json to_json(const RunRecord& r);
RunRecord run_record_from_json(const nlohmann::json& j);

}  // namespace diagnose
