// The run directory of one invocation: runs/<UTC time>-<name>/ with a copy of the
// workflow, the resolved configuration, state.json, steps/<id>/ and the reports.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "orchestrator/workflow/workflow.h"

namespace diagnose {

// Creates a new, unused directory under output_dir. Throws std::runtime_error.
std::string create_run_directory(const std::string& output_dir, const std::string& workflow_name);

std::string state_path(const std::string& run_dir);
std::string workflow_copy_path(const std::string& run_dir);
// steps/<id>/: the folder of a step's runs.
std::string step_dir_of(const std::string& run_dir, const std::string& step_id);

// workflow.yaml (the file as written) and resolved.json (defaults filled in, paths absolute).
void write_workflow_files(const Workflow& workflow, const std::string& run_dir);

nlohmann::json resolved_config(const Workflow& workflow);
// Scalars stay strings, except those that read as integers, numbers or booleans.
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace diagnose
