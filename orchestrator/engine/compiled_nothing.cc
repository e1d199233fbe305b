#include "orchestrator/engine/compiled_nothing.h"

#include "orchestrator/util/log_tail.h"
#include "runspec/plugin_status.h"

namespace diagnose {

std::optional<StepResult> script_compiled_nothing(const std::vector<RunRecord>& runs) {
  for (const RunRecord& run : runs) {
    if (run.status != RunStatus::Succeeded || run.dir.empty()) continue;
    const PluginStatus status = read_plugin_status(run.dir);
    if (!status.ran_script() || status.compile_calls != 0) continue;
    const std::string script = status.argv.size() > 2 ? status.argv[2] : "the script";
    StepResult result;
    const std::string summary =
        "the script ended without compiling anything: run '" + run.name + "' ran " + script +
        " to the end and it never called torch.compile, so there is no compiled graph to diagnose " +
        "(does it return, or take another branch, before compiling with these arguments?)";
    for (const auto& [path, stream] :
         {std::pair<std::string, std::string>{run.stdout_path, "stdout"}, {run.stderr_path, "stderr"}}) {
      const std::string tail = log_tail(path);
      if (!tail.empty()) result.evidence.push_back({"log", run.name + " " + stream + " (last lines)", path, tail});
    }
    return error_result(summary, std::move(result));
  }
  return std::nullopt;
}

}  // namespace diagnose
