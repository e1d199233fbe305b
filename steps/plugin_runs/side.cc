#include "steps/plugin_runs/side.h"

#include <utility>

#include "orchestrator/engine/run_dir.h"
#include "orchestrator/workflow/workflow_loader.h"

namespace diagnose {

RunOverrides RunOverrides::parse(const YAML::Node& node, Diagnostics& diagnostics) {
  RunOverrides overrides;
  if (!node || !node.IsMap()) return overrides;
  nlohmann::json keys = yaml_to_json(node);
  if (node["dump"] && node["dump"].IsScalar()) {  // a command run's, not the plugin's dump spec
    overrides.dump_path = node["dump"].Scalar();
    keys.erase("dump");
  }
  std::vector<RunSpecPatchError> errors;
  overrides.spec = run_spec_patch(keys, errors);
  for (const RunSpecPatchError& error : errors) {
    YAML::Node at = node;
    for (const std::string& key : error.path) at.reset(std::as_const(at)[key]);
    diagnostics.error(at.Mark(), error.message);
  }
  overrides.command = parse_command(node);
  return overrides;
}

Side Side::parse(const YAML::Node& node, Diagnostics& diagnostics) {
  Side side;
  side.given = node.IsDefined();
  if (node && node.IsScalar())
    side.path = node.Scalar();
  else
    side.run = RunOverrides::parse(node, diagnostics);
  return side;
}

}  // namespace diagnose
