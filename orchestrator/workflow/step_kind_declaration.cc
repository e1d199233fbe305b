#include "orchestrator/workflow/step_kind_declaration.h"

#include <stdexcept>

namespace diagnose {

namespace {

std::vector<const StepKindDeclaration*>& declared() {
  static std::vector<const StepKindDeclaration*> kinds;
  return kinds;
}

}  // namespace

nlohmann::json StepKindDeclaration::option_default(const std::string& name) const {
  for (const Property& p : parameters())
    if (p.name == name && !p.schema.default_value.is_null()) return p.schema.default_value;
  throw std::logic_error("step kind " + name_ + " declares no default for " + name);
}

void declare_step_kind(const StepKindDeclaration& kind) {
  if (find_declared_step_kind(kind.name())) throw std::logic_error("step kind registered twice: " + kind.name());
  declared().push_back(&kind);
}

const std::vector<const StepKindDeclaration*>& declared_step_kinds() { return declared(); }

const StepKindDeclaration* find_declared_step_kind(const std::string& name) {
  for (const StepKindDeclaration* kind : declared())
    if (kind->name() == name) return kind;
  return nullptr;
}

std::vector<std::string> step_kind_names() {
  std::vector<std::string> names;
  for (const StepKindDeclaration* kind : declared()) names.push_back(kind->name());
  return names;
}

}  // namespace diagnose
