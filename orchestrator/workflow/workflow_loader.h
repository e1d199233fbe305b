// Reading a workflow file: YAML syntax, the schema, then the checks of validate.h.
#pragma once

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

// Every error goes to `diagnostics` (which names `path`); nullopt when there was any.
std::optional<Workflow> load_workflow(const std::string& path, Diagnostics& diagnostics);
std::optional<Workflow> load_workflow_text(const std::string& text, const std::string& path, Diagnostics& diagnostics);

// A mapping with command keys (workflow_schema.h command_properties), already schema-checked.
CommandSpec parse_command(const YAML::Node& node);

}  // namespace diagnose
