// The checks that need the whole workflow: step ids, references in templates and
// conditions (unknown, later, cyclic), command forms, the workflow's tolerances.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

// A string the schema check found, with where it was (-1: outside the steps).
struct StringUse {
  int step_index = -1;
  YAML::Node node;
  std::string text;
  bool condition = false;
};

// Also parses each step's keys (StepKindDeclaration::parse) into StepSpec::options.
void validate_workflow(Workflow& workflow, const std::vector<StringUse>& strings, Diagnostics& diagnostics);

// The model's script and working directory exist, resolved as a run resolves them (against the
// workflow's directory; a cwd with templates only when its run starts). Not part of
// load_workflow: `diagnose report` reads a run's copy of its workflow, far from these files.
void check_model_paths(const Workflow& workflow, Diagnostics& diagnostics);

// The position `offset` characters into a scalar's text (quotes skipped), on the same line.
YAML::Mark mark_within(const std::string& file_text, const YAML::Node& node, size_t offset);

// argv xor shell (or neither, when `needs_command` is false), args only without them.
void check_command_form(const YAML::Node& node, const std::string& where, bool needs_command, Diagnostics& diagnostics);

// Every entry of a list of regular expressions compiles (std::regex, ECMAScript); `where`
// names the list in the messages ("steps.gate.layers").
void check_regexes(const YAML::Node& list, const std::string& where, Diagnostics& diagnostics);

}  // namespace diagnose
