#include "steps/step_kinds.h"

namespace diagnose {

std::unique_ptr<StepKind> make_run_step();
std::unique_ptr<StepKind> make_compare_step();
std::unique_ptr<StepKind> make_assert_step();
std::unique_ptr<StepKind> make_fusion_bisect_step();

const std::vector<std::unique_ptr<StepKind>>& step_kinds() {
  static const std::vector<std::unique_ptr<StepKind>> kinds = [] {
    std::vector<std::unique_ptr<StepKind>> k;
    k.push_back(make_run_step());
    k.push_back(make_compare_step());
    k.push_back(make_assert_step());
    k.push_back(make_fusion_bisect_step());
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
