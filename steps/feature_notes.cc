#include "steps/feature_notes.h"

#include <set>

#include "steps/plugin_run.h"

namespace diagnose {

void note_unavailable_features(const std::vector<RunRecord>& runs, StepResult& result) {
  std::set<std::string> noted;
  for (const RunRecord& run : runs) {
    const nlohmann::json status = read_plugin_status(run.dir);
    if (!status.is_object() || !status.contains("features") || !status["features"].is_object()) continue;
    // status.json is the plugin's: a field of another type reads as absent, never throws
    auto text = [](const nlohmann::json& object, const char* key) {
      return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : std::string();
    };
    const std::string torch = status.contains("torch_version") ? text(status, "torch_version") : "?";
    for (const auto& [name, feature] : status["features"].items()) {
      if (!feature.is_object() || !feature.contains("available") || feature["available"] != false ||
          !noted.insert(name).second)
        continue;
      std::string note = "torch " + torch + ": " + name + " unavailable (" + text(feature, "reason");
      const std::string without = text(feature, "without");
      if (!without.empty()) note += "; " + without;
      note += ")";
      result.summary += "; " + note;
      result.findings.push_back({note, ""});
    }
  }
}

}  // namespace diagnose
