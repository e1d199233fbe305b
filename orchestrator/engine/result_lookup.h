// Values of steps.<id>.<field> references, shared by conditions and templates.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"

namespace diagnose {

// steps.<id>.status|summary|dir|dump_dir|exit_code|<metric>, steps.<id>.runs.<run>.<field>.
// null when the step has not produced it (pending, skipped, several runs for dump_dir...).
nlohmann::json result_value(const State& state, const std::string& run_dir, const std::string& name);

}  // namespace diagnose
