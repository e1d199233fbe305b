// What dynamo_meta_check reads from the plugin's files: the per-op meta check
// (<run dir>/meta_check.json) and the graph breaks of a compiled run's status.json.
#pragma once

#include "steps/layer.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"

namespace diagnose {

struct MetaCheckSummary {
  int ok = 0, mismatched = 0, errors = 0, skipped = 0;
  std::vector<Finding> findings;                   // one per mismatching op (naming it), one per op that errored
  nlohmann::json table = nlohmann::json::array();  // op, output, field, eager, fake
  std::vector<std::string> mismatched_ops;
};

// {"ops": [{"op", "op_key", "status": ok|mismatch|error|skipped,
//           "mismatches": [{"output", "field", "eager", "fake"}], "message"}]}.
// Throws std::runtime_error naming what is wrong when the document has another shape.
MetaCheckSummary summarize_meta_check(const nlohmann::json& document);

struct GraphBreaks {
  long long count = 0;
  std::vector<std::string> reasons;
};

// status.json's graphs.graph_breaks and its reasons (graphs.graph_break_reasons or
// graphs.break_reasons; strings or objects with a "reason").
GraphBreaks graph_breaks_of(const nlohmann::json& status);

}  // namespace diagnose
