// What a run directory remembers: every step's result and every run's outcome.
// Saved as state.json after each run (write to a temporary file, then rename),
// so an interrupted invocation can be resumed from it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/exec/run_record.h"
#include "orchestrator/util/files.h"

namespace diagnose {

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

// What a step found, as the engine records it and the reports show it.
struct StepOutcome {
  std::string id, kind;
  StepStatus status = StepStatus::Pending;
  std::string summary;   // one line
  std::string category;  // verdict category this step diagnoses when it fails
  std::vector<Finding> findings;
  std::vector<Evidence> evidence;
  nlohmann::json metrics = nlohmann::json::object();  // readable by conditions as steps.<id>.<name>
  std::vector<std::string> reproduce;                 // commands that reproduce the result
};

struct StepResult : StepOutcome {
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

nlohmann::json to_json(const StepResult& s);
nlohmann::json to_json(const State& s);
StepResult step_result_from_json(const nlohmann::json& j);
// Throws std::runtime_error on a file that is not a state of a known version.
State state_from_json(const nlohmann::json& j);

void save_state(const State& state, const std::string& path);
// Throws std::runtime_error when the file is missing or unreadable.
State load_state(const std::string& path);

}  // namespace diagnose
