#include "orchestrator/engine/step_registry.h"

#include <stdexcept>

namespace diagnose {

namespace {

std::vector<std::unique_ptr<StepKind>>& registry() {
  static std::vector<std::unique_ptr<StepKind>> kinds;
  return kinds;
}

}  // namespace

void register_step_kind(std::unique_ptr<StepKind> kind) {
  if (find_step_kind(kind->name())) throw std::logic_error("step kind registered twice: " + kind->name());
  registry().push_back(std::move(kind));
}

const std::vector<std::unique_ptr<StepKind>>& step_kinds() { return registry(); }

const StepKind* find_step_kind(const std::string& name) {
  for (const auto& kind : registry())
    if (kind->name() == name) return kind.get();
  return nullptr;
}

std::vector<std::string> step_kind_names() {
  std::vector<std::string> names;
  for (const auto& kind : registry()) names.push_back(kind->name());
  return names;
}

}  // namespace diagnose
