// The targeted re-run of a comparing step: when its dumps reached their byte budget
// (dump_budget.h) and rows judged on statistics only fail, the judgement needs those rows'
// tensors (their element-wise errors, their float64 truth, where the error starts). The runs
// of the sides that left them out are made again dumping only the ops of those rows (dump.include
// by op key; the earliest kRegionOps of them, where the error starts), and their dumps filled
// in from the re-runs where the tensors are the same (compare/dump_fill.h); the step then judges
// again.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "compare/dump_fill.h"
#include "orchestrator/engine/step.h"

namespace diagnose {

// The most op keys one targeted re-run dumps.
constexpr size_t kRegionOps = 8;

// The op keys of the failing op rows compared on statistics because a dump's budget was reached,
// in execution order, at most `limit` (final outputs are judged from outputs/, never left out).
std::vector<std::string> over_budget_region(const compare::CompareResult& compared, size_t limit = kRegionOps);

// "^key$" with every character a Python regular expression could read as syntax escaped.
std::string exact_op_key_pattern(const std::string& op_key);

struct TargetedRerun {
  std::vector<std::string> ops;   // the op keys re-dumped
  std::vector<std::string> runs;  // the re-runs made
  compare::DumpFill fill;         // over every side
  std::vector<std::string> problems;

  nlohmann::json to_json() const;
  std::string text() const;  // a finding
};

// Makes again, dumping only `region`, each of `sides` (runs of the model whose dumps are
// compared) that reached its budget, and fills its dump from the re-run. nullopt when no side
// reached its budget.
std::optional<TargetedRerun> rerun_region(const StepContext& context, const std::vector<RunRequest>& sides,
                                          const std::vector<std::string>& region);

}  // namespace diagnose
