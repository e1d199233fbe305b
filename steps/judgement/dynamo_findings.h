// What dynamo_meta_check reads from the plugin's files: the per-op meta check
// (<run dir>/meta_check.json) and the graph breaks of a compiled run's status.json.
#pragma once

#include "steps/layer.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"
#include "runspec/plugin_status.h"

namespace diagnose {

struct MetaCheckSummary {
  int ok = 0, mismatched = 0, errors = 0, skipped = 0;
  int custom_ops = 0;  // custom ops checked against their schema
  // one per mismatching op (naming it), per schema violation, per op whose check errored
  std::vector<Finding> findings;
  nlohmann::json table = nlohmann::json::array();            // op, output, field, eager, fake
  nlohmann::json violation_table = nlohmann::json::array();  // op, schema, violation, what
  std::vector<std::string> mismatched_ops;
  std::vector<std::string> violating_ops;  // custom ops doing what their schema does not declare
};

// {"ops": [{"op", "op_key", "status": ok|mismatch|error|skipped,
//           "mismatches": [{"output", "field", "eager", "fake"}], "message",
//           custom ops also: "schema", "violations": [{"check", "kind", "message"}], "schema_error"}]}.
// Throws std::runtime_error naming what is wrong when the document has another shape.
MetaCheckSummary summarize_meta_check(const nlohmann::json& document);

// The kinds of schema violation of one custom op, distinct, in order: "undeclared mutation".
std::string violation_kinds(const MetaCheckSummary& summary, const std::string& op);

struct GraphBreaks {
  long long count = 0;
  std::vector<std::string> reasons;
};

// status.json's graphs.graph_breaks and its reasons (graphs.graph_break_reasons or
// graphs.break_reasons; strings or objects with a "reason").
GraphBreaks graph_breaks_of(const PluginStatus& status);

}  // namespace diagnose
