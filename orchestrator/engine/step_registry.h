// The step kinds the engine knows. The engine only declares the registry: the composition
// root (the diagnose binary's main, a test's environment) fills it before a workflow is
// loaded, with steps/kinds/step_kinds.h's register_step_kinds().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "orchestrator/engine/step.h"

namespace diagnose {

// Adds a kind, and declares it to the workflow format (workflow/step_kind_declaration.h); throws
// std::logic_error when a kind of that name is registered already.
void register_step_kind(std::unique_ptr<StepKind> kind);
// In registration order.
const std::vector<std::unique_ptr<StepKind>>& step_kinds();
// nullptr when no kind has that name.
const StepKind* find_step_kind(const std::string& name);

}  // namespace diagnose
