// A graph_dump_compare failure claims a state or an op as its defect only once an intervention
// confirmed it (docs/workflow.md, "How a culprit is confirmed"): the state that differs after a
// call whose outputs match (state_defect) with no confirmed forced write, or a failure that no op
// row localises (the kind's default, localized_op_defect), is an unconfirmed divergence with no
// culprit, saying why.
#pragma once

#include "steps/layer.h"

#include "orchestrator/engine/step.h"

namespace diagnose {

void claim_only_what_is_confirmed(StepResult& result);

}  // namespace diagnose
