#include "steps/judgement/confirmed_claims.h"

#include "steps/judgement/culprit_confirmation.h"

namespace diagnose {

namespace {

// Why no run confirmed the candidate: none was made (`did`: what it would have done), or
// `no_intervention` says why none can be (`would`: what it would do).
std::string no_confirming_run(const std::string& no_intervention, const std::string& did, const std::string& would) {
  if (no_intervention.empty()) return "no intervention run " + did;
  return no_intervention + ": no run can " + would + " to confirm it";
}

}  // namespace

void claim_only_what_is_confirmed(StepResult& result, const std::string& no_intervention) {
  if (result.status != StepStatus::Fail) return;
  const nlohmann::json confirmation = result.metrics.value("confirmation", nlohmann::json());
  const bool ran = confirmation.is_object();
  if (ran && confirmation.value("outcome", "") == "confirmed") return;
  const nlohmann::json category = result.metrics.value("category", nlohmann::json());
  const nlohmann::json culprit = result.metrics.value("culprit", nlohmann::json());
  std::string why;
  if (category == "state_defect") {
    if (!ran)
      why = "the differing state is a candidate, not a culprit: " +
            no_confirming_run(no_intervention, "forced its writes", "force its writes");
  } else if (category.is_null() && result.metrics.value("localized", false) == false) {
    why = "no op row localises the failure: no candidate to confirm";
  } else if (category.is_null() && !ran) {
    const nlohmann::json first = result.metrics.value("first_failing_op", nlohmann::json());
    const std::string candidate = culprit.is_string() ? culprit.get<std::string>()
                                  : first.is_string() ? first.get<std::string>()
                                                      : "the first failing row";
    why = unconfirmed_candidates({"`" + candidate + "`"}) + ": " +
          no_confirming_run(no_intervention, "took it out", "take the op out");
    result.metrics["localized"] = false;  // the next steps search on, as after a rejected candidate
  } else {
    return;
  }
  result.metrics["category"] = kUnconfirmedDivergence;
  result.metrics["culprit"] = nullptr;
  if (why.empty()) return;  // the confirmation's own summary says why
  result.summary += "; " + why;
  result.findings.push_back({why, ""});
}

}  // namespace diagnose
