#include "orchestrator/workflow/verdict_categories.h"

namespace diagnose {

const std::vector<VerdictCategory>& verdict_categories() {
  static const std::vector<VerdictCategory> categories = {
      {"single_op_graph_defect", "Single-op graph defect",
       "An operator gives wrong results when compiled alone as a graph: fix or report its graph-mode "
       "implementation (lowering, converter, kernel selection) first; whole-network comparisons are "
       "unreliable until single ops are right.",
       true},
      {"eager_device_defect", "Eager device defect",
       "The problem exists without graph mode: the eager kernel on the device (or configuration) under test "
       "disagrees with the CPU reference. Report the kernel with the named op's inputs.",
       true},
      {"dynamo_meta_defect", "Dynamo / meta defect",
       "Dynamo tracing, AOT autograd or an operator's meta (fake) implementation is wrong: check the named "
       "op's meta function and decomposition.",
       true},
      {"known_cause", "Known cause",
       "A known cause explains the difference (the culprit names it; the findings give its evidence and fix): "
       "apply the fix and run the workflow again before looking for a compiler defect.",
       true},
      {"fusion_defect", "Graph structure / fusion defect",
       "A fusion rule (or graph pass) produces the wrong result: turn the named rule off to work around it (a "
       "TorchAir/GE backend: the fusion switch file the step wrote; Inductor: the torch._inductor.config setting its "
       "workaround names, run spec switches.inductor_off), and report it with the failing subgraph.",
       true},
      {"user_pass_defect", "Your own graph pass produces the wrong result",
       "A graph pass of your own, set in one of torch._inductor.config's custom-pass slots (the culprit names it and "
       "the slot), produces the wrong result: the bisection found the failure gone with only that pass taken out, "
       "Inductor's own passes on. Fix the pass, or run without it (the slot set to None); the reproduce commands run "
       "the model with and without it.",
       true},
      {"state_defect", "The compiled graph does not carry the state between calls",
       "After a call whose outputs match eager, state that the next call reads (a module buffer, an input "
       "written in place, a cache) differs from eager's: the compiled graph lost or misplaced an in-place write "
       "(copy_, index_copy_, a cache update). Report the named state and the op that writes it in eager, with "
       "the first diverging call; to work around it, do that write outside the compiled region.",
       true},
      {"subgraph_defect", "Graph-only defect localised to a minimal subgraph",
       "The compiled graph fails only when the named ops are compiled together, and no fusion rule explains "
       "it: report the subgraph to the backend's developers with its standalone repro.py, and run those nodes "
       "eagerly to work around it.",
       true},
      {"localized_op_defect", "Defect localised to an op, not caused by fusion",
       "The graph run diverges at the named op while fusion is ruled out: examine that op's graph-mode "
       "inputs, layout and precision handling in context.",
       true},
      {"unconfirmed_divergence", "The compiled graph diverges; no culprit confirmed",
       "The graph run diverges from eager and its op rows (or the state that differs after a call) point at the "
       "candidate(s) the findings name, but the intervention run with a candidate run eagerly (a state's writes "
       "forced), the rest compiled, did not make the failure go away, or could not be made, or no op row localises "
       "the failure at all: a candidate is where to look first, not a proven cause. Read the confirmation's figures "
       "(report.json "
       "`confirmation`: rows and rmse before and after), run the model with the candidate's graph nodes eager "
       "yourself (run spec isolation.eager_nodes), and look for the minimal failing subgraph (subgraph_isolate).",
       true},
      {"precision_problem", "Precision problem",
       "A generic check found a precision difference; add the flowchart's diagnostic steps to classify it.", true},
      {"no_precision_problem", "No precision problem found", "Every step passed or was not needed.", false},
      {"inconclusive", "Inconclusive",
       "A step could not produce a result (a run crashed, timed out or could not start): fix it and resume "
       "with --resume.",
       false},
  };
  return categories;
}

const VerdictCategory* find_verdict_category(const std::string& name) {
  for (const VerdictCategory& c : verdict_categories())
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace diagnose
