// The plugin features a step's runs could not use on their torch (status.json's `features`:
// compat.py probes each one, and lists why it is unavailable and what is done without it).
#pragma once

#include "steps/layer.h"

#include <set>
#include <string>
#include <vector>

#include "orchestrator/engine/step.h"

namespace diagnose {

// "torch 2.5.1: compiled_dump unavailable (WHY; WITHOUT)" for each feature some run lacked,
// once per feature, appended to the result's summary and its findings; nothing when every
// probed feature was available (or no run wrote a status.json). `only`: just these features
// (empty: all).
void note_unavailable_features(const std::vector<RunRecord>& runs, StepResult& result,
                               const std::set<std::string>& only = {});

}  // namespace diagnose
