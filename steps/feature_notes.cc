#include "steps/feature_notes.h"

#include <set>

#include "steps/plugin_run.h"

namespace diagnose {

void note_unavailable_features(const std::vector<RunRecord>& runs, StepResult& result) {
  std::set<std::string> noted;
  for (const RunRecord& run : runs) {
    const nlohmann::json status = read_plugin_status(run.dir);
    if (!status.is_object() || !status.contains("features") || !status["features"].is_object()) continue;
    const std::string torch = status.value("torch_version", std::string("?"));
    for (const auto& [name, feature] : status["features"].items()) {
      if (!feature.is_object() || feature.value("available", true) || !noted.insert(name).second) continue;
      std::string note = "torch " + torch + ": " + name + " unavailable (" + feature.value("reason", std::string());
      const std::string without = feature.value("without", std::string());
      if (!without.empty()) note += "; " + without;
      note += ")";
      result.summary += "; " + note;
      result.findings.push_back({note, ""});
    }
  }
}

}  // namespace diagnose
