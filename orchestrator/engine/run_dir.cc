#include "orchestrator/engine/run_dir.h"

#include <boost/filesystem.hpp>
#include <ctime>
#include <stdexcept>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/engine/step_registry.h"

namespace diagnose {

namespace fs = boost::filesystem;

std::string create_run_directory(const std::string& output_dir, const std::string& workflow_name) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::string safe_name;
  for (char c : workflow_name)
    safe_name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  boost::system::error_code error;
  fs::create_directories(output_dir, error);
  if (error) throw std::runtime_error("cannot create " + output_dir + ": " + error.message());
  fs::path base = absolute_path(output_dir, fs::current_path().string());
  for (int suffix = 1; suffix < 1000; ++suffix) {
    std::string name = std::string(stamp) + "-" + safe_name + (suffix > 1 ? "-" + std::to_string(suffix) : "");
    fs::path candidate = base / name;
    // create_directory is atomic: two engines started in the same second get different names.
    if (fs::create_directory(candidate, error)) {
      fs::create_directory(candidate / "steps", error);
      return candidate.string();
    }
    if (error) throw std::runtime_error("cannot create " + candidate.string() + ": " + error.message());
  }
  throw std::runtime_error("too many run directories named " + std::string(stamp) + "-" + safe_name);
}

std::string state_path(const std::string& run_dir) { return run_dir + "/state.json"; }
std::string workflow_copy_path(const std::string& run_dir) { return run_dir + "/workflow.yaml"; }

std::string step_dir_of(const std::string& run_dir, const std::string& step_id) {
  return run_dir + "/steps/" + step_id;
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const YAML::Node& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& entry : node) out[entry.first.Scalar()] = yaml_to_json(entry.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      if (node.Tag() == "!") return node.Scalar();  // quoted in the file: a string
      long long integer;
      double number;
      bool boolean;
      if (YAML::convert<long long>::decode(node, integer)) return integer;
      if (YAML::convert<double>::decode(node, number)) return number;
      if (YAML::convert<bool>::decode(node, boolean)) return boolean;
      return node.Scalar();
    }
    default: return nullptr;
  }
}

nlohmann::json resolved_config(const Workflow& w) {
  const CommandSpec& m = w.model.command;
  nlohmann::json model = {{"argv", m.argv},
                          {"shell", m.shell},
                          {"cwd", absolute_path(m.cwd.value_or("."), w.dir)},
                          {"env", m.env},
                          {"timeout", m.timeout_s.value_or(w.defaults.timeout_s)},
                          {"retries", m.retries.value_or(0)}};
  if (!w.model.script.empty())
    model.update({{"script", absolute_path(w.model.script, w.dir)},
                  {"args", m.args},
                  {"python", w.model.python},
                  {"backend", w.model.backend},
                  {"device", w.model.device},
                  {"dtype", w.model.dtype ? nlohmann::json(*w.model.dtype) : nlohmann::json()}});
  nlohmann::json steps = nlohmann::json::array();
  for (const StepSpec& s : w.steps) {
    const StepKind* kind = find_step_kind(s.kind);
    steps.push_back({{"id", s.id},
                     {"kind", s.kind},
                     {"when", s.when},
                     {"on_failure", s.on_failure == OnFailure::Stop ? "stop" : "continue"},
                     {"diagnoses", s.diagnoses.empty() && kind ? kind->default_category() : s.diagnoses},
                     {"definition", yaml_to_json(s.node)}});
  }
  std::vector<std::string> tolerance_overrides;
  for (const compare::ToleranceOverride& o : w.defaults.tolerance_overrides)
    tolerance_overrides.push_back(o.assignment());
  return {{"format", "diagnose-resolved-workflow"},
          {"version", 1},
          {"name", w.name},
          {"path", absolute_path(w.path, fs::current_path().string())},
          {"dir", w.dir},
          {"model", model},
          {"defaults",
           {{"slots", w.defaults.slots},
            {"output_dir", w.defaults.output_dir},
            {"timeout", w.defaults.timeout_s},
            {"kill_grace", w.defaults.kill_grace_s},
            {"tolerance_overrides", tolerance_overrides}}},
          {"steps", steps},
          {"verdict", {{"order", w.verdict.order}, {"advice", w.verdict.advice}}},
          {"report", {{"formats", w.report.formats}}}};
}

void write_workflow_files(const Workflow& workflow, const std::string& run_dir) {
  write_file_atomically(workflow_copy_path(run_dir), workflow.text);
  write_file_atomically(run_dir + "/resolved.json", resolved_config(workflow).dump(2) + "\n");
}

}  // namespace diagnose
