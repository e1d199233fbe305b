#include "orchestrator/engine/state.h"

#include <stdexcept>

#include "orchestrator/util/enum_names.h"

namespace diagnose {

namespace {

const std::pair<StepStatus, const char*> kStepStatusNames[] = {
    {StepStatus::Pending, "pending"}, {StepStatus::Pass, "pass"},       {StepStatus::Fail, "fail"},
    {StepStatus::Error, "error"},     {StepStatus::Skipped, "skipped"},
};

}  // namespace

std::string step_status_name(StepStatus s) { return enum_name(kStepStatusNames, s); }

StepStatus step_status_from_name(const std::string& name) { return enum_from_name(kStepStatusNames, name); }

StepResult* State::find(const std::string& id) {
  for (StepResult& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

const StepResult* State::find(const std::string& id) const { return const_cast<State*>(this)->find(id); }

nlohmann::json to_json(const StepResult& s) {
  nlohmann::json findings = nlohmann::json::array(), evidence = nlohmann::json::array(), runs = nlohmann::json::array();
  for (const Finding& f : s.findings) findings.push_back({{"message", f.message}, {"op", f.op}});
  for (const Evidence& e : s.evidence)
    evidence.push_back({{"kind", e.kind}, {"name", e.name}, {"path", e.path}, {"value", e.value}});
  for (const RunRecord& r : s.runs) runs.push_back(to_json(r));
  return {{"id", s.id},
          {"kind", s.kind},
          {"status", step_status_name(s.status)},
          {"summary", s.summary},
          {"category", s.category},
          {"findings", findings},
          {"evidence", evidence},
          {"metrics", s.metrics},
          {"reproduce", s.reproduce},
          {"runs", runs},
          {"fingerprint", s.fingerprint},
          {"started", s.started},
          {"finished", s.finished}};
}

StepResult step_result_from_json(const nlohmann::json& j) {
  StepResult s;
  s.id = j.at("id").get<std::string>();
  s.kind = j.value("kind", "");
  s.status = step_status_from_name(j.value("status", "pending"));
  s.summary = j.value("summary", "");
  s.category = j.value("category", "");
  for (const auto& f : j.value("findings", nlohmann::json::array()))
    s.findings.push_back({f.value("message", ""), f.value("op", "")});
  for (const auto& e : j.value("evidence", nlohmann::json::array()))
    s.evidence.push_back(
        {e.value("kind", ""), e.value("name", ""), e.value("path", ""), e.value("value", nlohmann::json())});
  s.metrics = j.value("metrics", nlohmann::json::object());
  s.reproduce = j.value("reproduce", std::vector<std::string>{});
  for (const auto& r : j.value("runs", nlohmann::json::array())) s.runs.push_back(run_record_from_json(r));
  s.fingerprint = j.value("fingerprint", "");
  s.started = j.value("started", 0.0);
  s.finished = j.value("finished", 0.0);
  return s;
}

nlohmann::json to_json(const State& s) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepResult& r : s.steps) steps.push_back(to_json(r));
  return {{"format", "diagnose-state"},       {"version", State::kVersion},   {"workflow_name", s.workflow_name},
          {"workflow_path", s.workflow_path}, {"run_dir", s.run_dir},         {"started", s.started},
          {"finished", s.finished},           {"interrupted", s.interrupted}, {"steps", steps},
          {"dump_budget", s.dump_budget}};
}

State state_from_json(const nlohmann::json& j) {
  if (j.value("format", "") != "diagnose-state") throw std::runtime_error("not a diagnose state file");
  if (j.value("version", 0) > State::kVersion)
    throw std::runtime_error("state file version " + std::to_string(j.value("version", 0)) +
                             " is newer than this diagnose understands (" + std::to_string(State::kVersion) + ")");
  State s;
  s.workflow_name = j.value("workflow_name", "");
  s.workflow_path = j.value("workflow_path", "");
  s.run_dir = j.value("run_dir", "");
  s.started = j.value("started", 0.0);
  s.finished = j.value("finished", 0.0);
  s.interrupted = j.value("interrupted", false);
  for (const auto& step : j.value("steps", nlohmann::json::array())) s.steps.push_back(step_result_from_json(step));
  s.dump_budget = j.value("dump_budget", nlohmann::json());
  return s;
}

void save_state(const State& state, const std::string& path) {
  write_file_atomically(path, to_json(state).dump(2) + "\n");
}

State load_state(const std::string& path) {
  std::optional<std::string> text = read_file(path);
  if (!text) throw std::runtime_error("cannot read " + path);
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path + " is not valid JSON");
  try {
    return state_from_json(j);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace diagnose
