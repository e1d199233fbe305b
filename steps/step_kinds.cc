#include "steps/step_kinds.h"

namespace diagnose {

std::unique_ptr<StepKind> make_run_step();
std::unique_ptr<StepKind> make_compare_step();
std::unique_ptr<StepKind> make_assert_step();
std::unique_ptr<StepKind> make_gate_step();
std::unique_ptr<StepKind> make_fusion_bisect_step();
std::unique_ptr<StepKind> make_single_op_check_step();
std::unique_ptr<StepKind> make_eager_device_vs_cpu_step();
std::unique_ptr<StepKind> make_dynamo_meta_check_step();
std::unique_ptr<StepKind> make_graph_dump_compare_step();

const std::vector<std::unique_ptr<StepKind>>& step_kinds() {
  static const std::vector<std::unique_ptr<StepKind>> kinds = [] {
    std::vector<std::unique_ptr<StepKind>> k;
    k.push_back(make_run_step());
    k.push_back(make_compare_step());
    k.push_back(make_assert_step());
    k.push_back(make_gate_step());
    k.push_back(make_fusion_bisect_step());
    k.push_back(make_single_op_check_step());
    k.push_back(make_eager_device_vs_cpu_step());
    k.push_back(make_dynamo_meta_check_step());
    k.push_back(make_graph_dump_compare_step());
    return k;
  }();
  return kinds;
}

const StepKind* find_step_kind(const std::string& name) {
  for (const auto& kind : step_kinds())
    if (kind->name() == name) return kind.get();
  return nullptr;
}

std::vector<std::string> step_kind_names() {
  std::vector<std::string> names;
  for (const auto& kind : step_kinds()) names.push_back(kind->name());
  return names;
}

}  // namespace diagnose
