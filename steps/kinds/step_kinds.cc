#include "steps/kinds/step_kinds.h"

#include "orchestrator/engine/step_registry.h"

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
std::unique_ptr<StepKind> make_subgraph_isolate_step();
std::unique_ptr<StepKind> make_known_causes_step();

void register_step_kinds() {
  register_step_kind(make_run_step());
  register_step_kind(make_compare_step());
  register_step_kind(make_assert_step());
  register_step_kind(make_gate_step());
  register_step_kind(make_fusion_bisect_step());
  register_step_kind(make_single_op_check_step());
  register_step_kind(make_eager_device_vs_cpu_step());
  register_step_kind(make_dynamo_meta_check_step());
  register_step_kind(make_graph_dump_compare_step());
  register_step_kind(make_subgraph_isolate_step());
  register_step_kind(make_known_causes_step());
}

}  // namespace diagnose
