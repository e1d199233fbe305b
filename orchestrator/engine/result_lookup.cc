#include "orchestrator/engine/result_lookup.h"

#include <sstream>
#include <vector>

namespace diagnose {

namespace {

nlohmann::json run_value(const RunRecord& run, const std::string& field) {
  if (field == "status") return run_status_name(run.status);
  if (field == "exit_code") return run.exit_code ? nlohmann::json(*run.exit_code) : nlohmann::json();
  if (field == "dump_dir") return run.dump_dir;
  if (field == "dir") return run.dir;
  return nullptr;
}

}  // namespace

nlohmann::json result_value(const State& state, const std::string& run_dir, const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream split(name);
  for (std::string part; std::getline(split, part, '.');) parts.push_back(part);
  if (parts.size() < 3 || parts[0] != "steps") return nullptr;
  const StepResult* result = state.find(parts[1]);
  if (!result || result->status == StepStatus::Pending) return nullptr;
  const std::string& field = parts[2];
  if (field == "status") return step_status_name(result->status);
  if (field == "summary") return result->summary;
  if (field == "dir") return run_dir + "/steps/" + result->id;
  if (field == "runs") {
    if (parts.size() != 5) return nullptr;
    for (const RunRecord& run : result->runs)
      if (run.name == parts[3]) return run_value(run, parts[4]);
    return nullptr;
  }
  if (field == "dump_dir" || field == "exit_code") {
    if (result->runs.size() != 1) return nullptr;
    return run_value(result->runs.front(), field);
  }
  if (result->metrics.contains(field)) return result->metrics.at(field);
  return nullptr;
}

}  // namespace diagnose
