#include "steps/judgement/confirmed_claims.h"

#include "steps/judgement/culprit_confirmation.h"

namespace diagnose {

void claim_only_what_is_confirmed(StepResult& result) {
  if (result.status != StepStatus::Fail) return;
  const nlohmann::json confirmation = result.metrics.value("confirmation", nlohmann::json());
  const bool ran = confirmation.is_object();
  if (ran && confirmation.value("outcome", "") == "confirmed") return;
  const nlohmann::json category = result.metrics.value("category", nlohmann::json());
  std::string why;
  if (category == "state_defect")
    why = ran ? "" : "the differing state is a candidate, not a culprit: no intervention run forced its writes";
  else if (category.is_null() && result.metrics.value("localized", false) == false)
    why = "no op row localises the failure: no candidate to confirm";
  else
    return;
  result.metrics["category"] = kUnconfirmedDivergence;
  result.metrics["culprit"] = nullptr;
  if (why.empty()) return;  // the confirmation's own summary says why
  result.summary += "; " + why;
  result.findings.push_back({why, ""});
}

}  // namespace diagnose
