#include "orchestrator/engine/verdict.h"

#include <algorithm>

#include "orchestrator/engine/distinct_findings.h"

namespace diagnose {

namespace {

std::string culprit_of(const StepResult& step) {
  // a culprit that an intervention run did not confirm is never named
  const nlohmann::json confirmation = step.metrics.value("confirmation", nlohmann::json());
  if (confirmation.is_object() && confirmation.value("outcome", "") != "confirmed") return "";
  if (step.metrics.value("category", nlohmann::json()) == "unconfirmed_divergence") return "";
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
  v.findings = distinct_findings(step.findings, culprit_of(step));
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
    v.confirmation = decisive->metrics.value("confirmation", nlohmann::json());
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
