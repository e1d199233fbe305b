// A script that ends without ever calling torch.compile leaves nothing to diagnose: every step
// after the first run would fail for want of a compiled graph. The engine stops the workflow at
// the first step whose plugin run shows it (status.json `compile_calls` empty after the script
// ran to the end), with an inconclusive verdict that says so and shows the run's log tail.
#pragma once

#include <optional>
#include <vector>

#include "orchestrator/engine/step.h"
#include "orchestrator/exec/run_record.h"

namespace diagnose {

// The step's error when one of `runs` ran the model's script to the end without it calling
// torch.compile; nullopt otherwise (no plugin run, a run that failed, a plugin that does not
// record the calls).
std::optional<StepResult> script_compiled_nothing(const std::vector<RunRecord>& runs);

}  // namespace diagnose
