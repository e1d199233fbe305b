#include "orchestrator/engine/step.h"

#include "orchestrator/exec/subprocess.h"

namespace diagnose {

StepResult error_result(std::string summary, StepResult partial) {
  partial.status = StepStatus::Error;
  partial.summary = std::move(summary);
  return partial;
}

std::optional<StepResult> error_from_runs(const std::vector<RunRecord>& runs) {
  StepResult result;
  std::string failed;
  for (const RunRecord& run : runs) {
    if (run.status == RunStatus::Succeeded) continue;
    failed +=
        (failed.empty() ? "" : "; ") + run.name + ": " + (run.error.empty() ? run_status_name(run.status) : run.error);
    result.findings.push_back(
        {"run '" + run.name + "' " + run_status_name(run.status) + (run.error.empty() ? "" : ": " + run.error), ""});
    for (const auto& [path, stream] : {std::pair<std::string, std::string>{run.stderr_path, "stderr"},
                                       std::pair<std::string, std::string>{run.stdout_path, "stdout"}}) {
      std::string tail = log_tail(path);
      if (!tail.empty()) result.evidence.push_back({"log", run.name + " " + stream + " (last lines)", path, tail});
    }
  }
  if (failed.empty()) return std::nullopt;
  return error_result("model run failed: " + failed, std::move(result));
}

}  // namespace diagnose
