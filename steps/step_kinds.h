// The registered step kinds. Adding a kind: one file in steps/ defining
// `std::unique_ptr<StepKind> make_<kind>_step()`, and one line in step_kinds.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "orchestrator/step.h"

namespace diagnose {

const std::vector<std::unique_ptr<StepKind>>& step_kinds();
// nullptr when no kind has that name.
const StepKind* find_step_kind(const std::string& name);
std::vector<std::string> step_kind_names();

}  // namespace diagnose
