// report.md: the verdict, then one section per step, for people.
#pragma once

#include <string>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

std::string report_markdown(const State& state, const Verdict& verdict);

}  // namespace diagnose
