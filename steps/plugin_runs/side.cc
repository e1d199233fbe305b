#include "steps/plugin_runs/side.h"

#include "orchestrator/engine/run_dir.h"
#include "orchestrator/workflow/workflow_loader.h"

namespace diagnose {

RunOverrides RunOverrides::parse(const YAML::Node& node) {
  RunOverrides overrides;
  if (!node || !node.IsMap()) return overrides;
  overrides.spec = yaml_to_json(node);
  overrides.command = parse_command(node);
  if (node["dump"] && node["dump"].IsScalar()) overrides.dump_path = node["dump"].Scalar();
  return overrides;
}

Side Side::parse(const YAML::Node& node) {
  Side side;
  side.given = node.IsDefined();
  if (node && node.IsScalar())
    side.path = node.Scalar();
  else
    side.run = RunOverrides::parse(node);
  return side;
}

}  // namespace diagnose
