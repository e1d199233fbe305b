// report.md: the verdict, then one section per step, for people.
#pragma once

#include <string>

#include "orchestrator/state.h"
#include "orchestrator/verdict.h"

namespace diagnose {

std::string report_markdown(const State& state, const Verdict& verdict);

}  // namespace diagnose
