// The verdict's findings, one per distinct fact: the same finding said of several ranks, graphs
// or calls ("first failing op rank 0 call 1: X", "first failing op rank 1 call 1: X") becomes one
// line that lists them ("first failing op (ranks 0, 1; call 1): X"), a finding repeated (for the
// final outputs too, or as "error starts at op X" after "first failing op: X") is said once, and
// the findings that name the culprit come first. A model output or state is never said to be where
// an error starts ("first failing output call 2: output.logits": dump_judgement).
#pragma once

#include <string>
#include <vector>

#include "orchestrator/engine/state.h"

namespace diagnose {

std::vector<Finding> distinct_findings(const std::vector<Finding>& findings, const std::string& culprit);

}  // namespace diagnose
