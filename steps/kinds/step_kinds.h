// The built-in step kinds. Adding a kind: one file in steps/ defining
// `std::unique_ptr<StepKind> make_<kind>_step()`, and one line in step_kinds.cc.
#pragma once

#include "steps/layer.h"

namespace diagnose {

// Registers every built-in kind with the engine (orchestrator/engine/step_registry.h); once.
void register_step_kinds();

}  // namespace diagnose
