#include "steps/plugin_runs/feature_notes.h"

#include <set>

#include "steps/json_text.h"
#include "steps/plugin_runs/plugin_run.h"

namespace diagnose {

void note_unavailable_features(const std::vector<RunRecord>& runs, StepResult& result,
                               const std::set<std::string>& only) {
  std::set<std::string> noted;
  for (const RunRecord& run : runs) {
    const PluginStatus status = read_plugin_status(run.dir);
    const std::string torch = status.torch_version.value_or("?");
    for (const auto& [name, feature] : status.features) {
      if (!feature.unavailable || (!only.empty() && !only.count(name)) || !noted.insert(name).second) continue;
      std::string note = "torch " + torch + ": " + name + " unavailable (" + feature.reason;
      if (!feature.without.empty()) note += "; " + feature.without;
      note += ")";
      result.summary += "; " + note;
      result.findings.push_back({note, ""});
    }
  }
}

}  // namespace diagnose
