#include "steps/feature_notes.h"

#include <set>

#include "steps/json_text.h"
#include "steps/plugin_run.h"

namespace diagnose {

void note_unavailable_features(const std::vector<RunRecord>& runs, StepResult& result,
                               const std::set<std::string>& only) {
  std::set<std::string> noted;
  for (const RunRecord& run : runs) {
    const nlohmann::json status = read_plugin_status(run.dir);
    if (!status.is_object() || !status.contains("features") || !status["features"].is_object()) continue;
    const std::string torch = status.contains("torch_version") ? string_at(status, "torch_version") : "?";
    for (const auto& [name, feature] : status["features"].items()) {
      if (!feature.is_object() || !feature.contains("available") || feature["available"] != false ||
          (!only.empty() && !only.count(name)) || !noted.insert(name).second)
        continue;
      std::string note = "torch " + torch + ": " + name + " unavailable (" + string_at(feature, "reason");
      const std::string without = string_at(feature, "without");
      if (!without.empty()) note += "; " + without;
      note += ")";
      result.summary += "; " + note;
      result.findings.push_back({note, ""});
    }
  }
}

}  // namespace diagnose
