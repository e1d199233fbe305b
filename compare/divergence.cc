#include "compare/divergence.h"

#include <map>

namespace diagnose::compare {

namespace {

struct OpState {
  bool has_inputs = false, input_fails = false, input_unjudged = false, output_fails = false;
};

}  // namespace

std::vector<Divergence> find_divergences(const std::vector<RowGroup>& groups) {
  std::vector<Divergence> out;
  for (const RowGroup& group : groups) {
    // Rows are in execution order; tokens are contiguous runs of it.
    std::map<int64_t, std::vector<const Row*>> by_token;
    for (const Row& row : group.rows) by_token[row.spec.token_id].push_back(&row);
    for (const auto& [token, rows] : by_token) {
      std::map<std::string, OpState> ops;
      std::vector<std::string> op_order;
      const Row* first_fail = nullptr;
      for (const Row* row_ptr : rows) {
        const Row& row = *row_ptr;
        auto [it, fresh] = ops.try_emplace(row.spec.op_key);
        if (fresh) op_order.push_back(row.spec.op_key);
        const bool failed = row.verdict == Verdict::Fail;
        if (row.spec.direction == Direction::Input && !row.spec.self_compare) {
          it->second.has_inputs = true;
          it->second.input_fails |= failed;
          it->second.input_unjudged |= !failed && row.verdict != Verdict::Pass;
        } else {
          it->second.output_fails |= failed;
        }
        if (failed && !first_fail) first_fail = &row;
      }
      if (!first_fail) continue;
      Divergence d;
      d.rank = group.rank;
      d.graph = group.graph;
      d.token_id = token;
      d.first_failing_data_id = first_fail->data_id;
      d.first_failing_op = first_fail->spec.op_key;
      for (const std::string& key : op_order) {
        const OpState& op = ops[key];
        if (!op.output_fails) continue;
        const bool source = op.has_inputs ? !op.input_fails : key == d.first_failing_op;
        if (!source) continue;
        d.source_ops.push_back(key);
        d.source_inputs.push_back(!op.has_inputs      ? SourceInputs::NotDumped
                                  : op.input_unjudged ? SourceInputs::NotAllJudged
                                                      : SourceInputs::Passed);
      }
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::string source_inputs_text(SourceInputs inputs) {
  switch (inputs) {
    case SourceInputs::Passed: return "its inputs pass, an output fails";
    case SourceInputs::NotAllJudged: return "no input fails, but not every input was judged; an output fails";
    case SourceInputs::NotDumped: break;
  }
  return "the first failing row; its inputs were not dumped, so not judged";
}

}  // namespace diagnose::compare
