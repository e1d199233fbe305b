// junit.xml: one test case per step, for CI systems (failure, error or skipped).
#pragma once

#include <string>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

std::string report_junit(const State& state, const Verdict& verdict);

}  // namespace diagnose
