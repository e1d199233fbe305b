#include "orchestrator/engine/step.h"

#include <boost/filesystem.hpp>

#include "orchestrator/exec/rank_group.h"
#include "orchestrator/util/log_tail.h"

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
    // A local rank group's: every rank's own logs (the run's hold them all, the rank to blame last).
    const bool rank_logs = run.ranks > 1 && boost::filesystem::exists(rank_log_path(run.stderr_path, 0));
    for (int rank = rank_logs ? 0 : -1; rank < (rank_logs ? run.ranks : 0); ++rank) {
      for (const auto& [run_log, stream] : {std::pair<std::string, std::string>{run.stderr_path, "stderr"},
                                            std::pair<std::string, std::string>{run.stdout_path, "stdout"}}) {
        std::string path = rank < 0 ? run_log : rank_log_path(run_log, rank);
        std::string tail = log_tail(path);
        std::string whose = run.name + (rank < 0 ? "" : " rank " + std::to_string(rank));
        if (!tail.empty()) result.evidence.push_back({"log", whose + " " + stream + " (last lines)", path, tail});
      }
    }
  }
  if (failed.empty()) return std::nullopt;
  return error_result("model run failed: " + failed, std::move(result));
}

}  // namespace diagnose
