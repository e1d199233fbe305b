#include "orchestrator/engine/verdict.h"

#include <algorithm>

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
       "A fusion rule (or graph pass) produces the wrong result: turn the named rule off (fusion_switch_file) "
       "to work around it, and report it with the failing subgraph.",
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

namespace {

std::string culprit_of(const StepResult& step) {
  for (const char* key : {"culprit", "first_failing_op"}) {
    if (step.metrics.contains(key) && step.metrics.at(key).is_string()) return step.metrics.at(key).get<std::string>();
  }
  for (const Finding& f : step.findings)
    if (!f.op.empty()) return f.op;
  return "";
}

std::string advice_for(const std::string& category, const std::map<std::string, std::string>& advice) {
  auto custom = advice.find(category);
  if (custom != advice.end()) return custom->second;
  const VerdictCategory* c = find_verdict_category(category);
  return c ? c->advice : "";
}

// Fills in the verdict that `step` decides: the category with its title and advice, the exit
// code, and the step's findings, evidence and reproduce commands.
void decided_by(Verdict& v, const StepResult& step, const std::string& category, int exit_code,
                const std::map<std::string, std::string>& advice) {
  const VerdictCategory* c = find_verdict_category(category);
  v.category = category;
  v.title = c ? c->title : category;
  v.step = step.id;
  v.findings = step.findings;
  v.evidence = step.evidence;
  v.reproduce = step.reproduce;
  v.advice = advice_for(category, advice);
  v.exit_code = exit_code;
}

// The rows the steps compared on statistics because a dump's byte budget was reached
// (dump_judgement's metric statistics_only_over_budget), said after the verdict: a verdict
// resting on them is not one on every tensor.
std::string statistics_only_rows(const State& state) {
  std::string text;
  for (const StepResult& step : state.steps) {
    const nlohmann::json rows = step.metrics.value("statistics_only_over_budget", nlohmann::json());
    if (step.status == StepStatus::Skipped || !rows.is_number_integer() || rows.get<int64_t>() <= 0) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(rows.get<int64_t>()) + " in step '" + step.id + "'";
  }
  return text.empty()
             ? ""
             : "; rows judged on statistics only, the dump budget being reached (defaults.dump_budget): " + text;
}

Verdict decide(const std::vector<std::string>& custom_order, const std::map<std::string, std::string>& advice,
               const State& state) {
  std::vector<std::string> order = custom_order;
  for (const VerdictCategory& c : verdict_categories())
    if (c.diagnosable && std::find(order.begin(), order.end(), c.name) == order.end()) order.push_back(c.name);
  auto rank = [&](const std::string& category) {
    return static_cast<size_t>(std::find(order.begin(), order.end(), category) - order.begin());
  };

  Verdict v;
  const StepResult* decisive = nullptr;
  const StepResult* first_error = nullptr;
  for (const StepResult& step : state.steps) {
    if (step.status == StepStatus::Fail) {
      v.failed_steps.push_back(step.id);
      if (!decisive || rank(step.category) < rank(decisive->category)) decisive = &step;
    } else if (step.status == StepStatus::Error || step.status == StepStatus::Pending) {
      v.errored_steps.push_back(step.id);
      if (!first_error || rank(step.category) < rank(first_error->category)) first_error = &step;
    }
  }

  // A failure is conclusive unless a step that could have explained it better errored.
  if (decisive && (!first_error || rank(decisive->category) <= rank(first_error->category))) {
    decided_by(v, *decisive, decisive->category, kExitProblem, advice);
    v.culprit = culprit_of(*decisive);
    v.summary = v.title + (v.culprit.empty() ? "" : ": " + v.culprit) + " (step '" + decisive->id +
                "': " + decisive->summary + ")";
    return v;
  }
  if (first_error) {
    decided_by(v, *first_error, "inconclusive", kExitInfrastructure, advice);
    v.summary = v.title + ": step '" + first_error->id + "' " +
                (first_error->status == StepStatus::Pending ? std::string("did not finish")
                                                            : "errored: " + first_error->summary);
    if (decisive)
      v.summary += "; step '" + decisive->id + "' suggests " + decisive->category + " but an earlier check is missing";
    return v;
  }
  v.category = "no_precision_problem";
  v.title = find_verdict_category("no_precision_problem")->title;
  size_t passed = 0, skipped = 0;
  for (const StepResult& step : state.steps) (step.status == StepStatus::Pass ? passed : skipped) += 1;
  v.summary = v.title + ": " + std::to_string(passed) + " step(s) passed, " + std::to_string(skipped) + " skipped";
  v.advice = advice_for(v.category, advice);
  v.exit_code = kExitNoProblem;
  return v;
}

}  // namespace

Verdict compute_verdict(const Workflow& workflow, const State& state) {
  return compute_verdict(workflow.verdict.order, workflow.verdict.advice, state);
}

Verdict compute_verdict(const std::vector<std::string>& order, const std::map<std::string, std::string>& advice,
                        const State& state) {
  Verdict v = decide(order, advice, state);
  v.summary += statistics_only_rows(state);
  return v;
}

}  // namespace diagnose
