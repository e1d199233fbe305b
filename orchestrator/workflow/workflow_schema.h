// The schema of the workflow format (docs/workflow.md), built from the registered step kinds.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "compare/judge.h"
#include "orchestrator/workflow/schema.h"

namespace diagnose {

class StepKindDeclaration;

// Keys that say how to start a process: argv, shell, args, env, cwd, timeout, retries, outputs.
std::vector<Property> command_properties();
// The verdict categories a step may diagnose (engine/verdict.h).
std::vector<std::string> diagnosable_categories();

// The fields of one tolerance preset a workflow may override (compare/judge.h).
Schema tolerance_preset_schema();
// The `tolerances:` key (overrides by preset name) of the defaults and of every kind that compares;
// `fields`: what one preset's mapping holds.
Property tolerances_property(const std::string& description, Schema fields = tolerance_preset_schema());
// A `tolerances:` mapping ({fp16: {rtol: 1e-2}}) as overrides, in the order written; what
// compare::Tolerances rejects is left out, and reported in `diagnostics` when given.
std::vector<compare::ToleranceOverride> tolerance_overrides(const YAML::Node& node, Diagnostics* diagnostics = nullptr);
Schema model_schema();
Schema defaults_schema();
Schema verdict_schema();
Schema report_schema();
// id, kind, when, on_failure, diagnoses, description, then the kind's parameters.
Schema step_schema(const StepKindDeclaration& kind);
// The whole file, steps as an anyOf over the kinds.
Schema workflow_schema();

// `diagnose schema`: the JSON Schema document.
nlohmann::json workflow_json_schema();

}  // namespace diagnose
