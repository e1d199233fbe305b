// A graph_dump_compare failure claims a state or an op as its defect only once an intervention
// confirmed it (docs/workflow.md, "How a culprit is confirmed"): the state that differs after a
// call whose outputs match (state_defect) with no confirmed forced write, an op row no
// intervention could take out (dumps given as paths, the module outputs' pass), or a failure
// that no op row localises (the kind's default, localized_op_defect), is an unconfirmed
// divergence with no culprit, saying why; the first divergence stays reported, as a candidate.
#pragma once

#include "steps/layer.h"

#include <string>

#include "orchestrator/engine/step.h"

namespace diagnose {

// `no_intervention`: why no intervention run could be made ("the dumps were given as paths"), ""
// where one could (an unconfirmed claim then says that none was made).
void claim_only_what_is_confirmed(StepResult& result, const std::string& no_intervention = "");

}  // namespace diagnose
