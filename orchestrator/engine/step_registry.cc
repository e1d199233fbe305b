#include "orchestrator/engine/step_registry.h"

namespace diagnose {

namespace {

std::vector<std::unique_ptr<StepKind>>& registry() {
  static std::vector<std::unique_ptr<StepKind>> kinds;
  return kinds;
}

}  // namespace

void register_step_kind(std::unique_ptr<StepKind> kind) {
  declare_step_kind(*kind);
  registry().push_back(std::move(kind));
}

const std::vector<std::unique_ptr<StepKind>>& step_kinds() { return registry(); }

const StepKind* find_step_kind(const std::string& name) {
  for (const auto& kind : registry())
    if (kind->name() == name) return kind.get();
  return nullptr;
}

}  // namespace diagnose
