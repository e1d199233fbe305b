// What a run directory remembers: every step's result and every run's outcome.
// Saved as state.json after each run (write to a temporary file, then rename),
// so an interrupted invocation can be resumed from it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

struct RunRecord {
  std::string name;
  RunStatus status = RunStatus::Pending;
  std::vector<std::string> argv;  // as executed (a shell form is /bin/sh -c TEXT)
  std::string cwd;
  std::map<std::string, std::string> env;  // variables set on top of the engine's environment
  std::string dir, dump_dir, stdout_path, stderr_path;
  std::optional<int> exit_code;
  std::optional<int> signal;
  double started = 0, finished = 0;  // seconds since the epoch
  int attempts = 0;
  std::string error;   // why it did not succeed, in words
  std::string job_id;  // the Slurm job of the last attempt; empty for local runs
  // How a local run's last attempt started, "warm_fork" or "process" (warm_launcher.h), and why.
  std::string launch, launch_reason;
  std::string identity;  // a plugin run's (shared_runs.h)
  int ranks = 1;         // > 1: the run's processes, one per rank (runner.ranks), each with its logs
  // A run made for another request (shared_runs.h): the step and run that made it; empty otherwise.
  std::string from_step, from_run;
};

enum class StepStatus { Pending, Pass, Fail, Error, Skipped };
std::string step_status_name(StepStatus s);
StepStatus step_status_from_name(const std::string& name);

struct Finding {
  std::string message;
  std::string op;  // the operator / rule it names, if any
};

// A file, table or metric that supports a step's result.
struct Evidence {
  std::string kind;  // "file", "table", "metric", "log"
  std::string name;
  std::string path;      // file, log
  nlohmann::json value;  // table (list of objects), metric (number/string), log (tail text)
};

struct StepResult {
  std::string id, kind;
  StepStatus status = StepStatus::Pending;
  std::string summary;   // one line
  std::string category;  // verdict category this step diagnoses when it fails
  std::vector<Finding> findings;
  std::vector<Evidence> evidence;
  nlohmann::json metrics = nlohmann::json::object();  // readable by conditions as steps.<id>.<name>
  std::vector<std::string> reproduce;                 // commands that reproduce the result
  std::vector<RunRecord> runs;
  std::string fingerprint;  // of the step's definition; a changed step is run again on resume
  double started = 0, finished = 0;
};

struct State {
  static constexpr int kVersion = 1;
  std::string workflow_name, workflow_path, run_dir;
  double started = 0, finished = 0;
  bool interrupted = false;
  std::vector<StepResult> steps;  // in workflow order
  // defaults.dump_budget as the engine split it, and what the dumps kept (dump_budget.h); null: none.
  nlohmann::json dump_budget;

  StepResult* find(const std::string& id);
  const StepResult* find(const std::string& id) const;
};

nlohmann::json to_json(const RunRecord& r);
nlohmann::json to_json(const StepResult& s);
nlohmann::json to_json(const State& s);
RunRecord run_record_from_json(const nlohmann::json& j);
StepResult step_result_from_json(const nlohmann::json& j);
// Throws std::runtime_error on a file that is not a state of a known version.
State state_from_json(const nlohmann::json& j);

// The whole file; nullopt when it cannot be read (missing, a directory...).
std::optional<std::string> read_file(const std::string& path);
// Atomic: readers see the old or the new file, never half of one.
void write_file_atomically(const std::string& path, const std::string& content);
void save_state(const State& state, const std::string& path);
// Throws std::runtime_error when the file is missing or unreadable.
State load_state(const std::string& path);

}  // namespace diagnose
