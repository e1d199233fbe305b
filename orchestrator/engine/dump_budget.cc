#include "orchestrator/engine/dump_budget.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "orchestrator/engine/shared_runs.h"
#include "orchestrator/exec/warm_launcher.h"
#include "runspec/plugin_status.h"

namespace diagnose {

nlohmann::json plan_dump_budget(int64_t limit_bytes, const std::vector<PlannedRun>& planned, const SharedRuns& shared,
                                const std::map<std::string, int>& ranks_by_step) {
  if (limit_bytes <= 0) return nullptr;
  std::map<std::string, int> ranks_of_run;  // by run identity: a run shared by steps is one
  for (const PlannedRun& run : planned) {
    RunSpec spec = shared.spec_for(run);
    if (!takes_dump_share(spec)) continue;
    RunRequest request = run.request;
    request.spec_identity = spec_identity(spec);
    const auto step_ranks = ranks_by_step.find(run.step);
    const int ranks = step_ranks == ranks_by_step.end() || plugin_tool_argv(request.argv) ? 1 : step_ranks->second;
    int& known = ranks_of_run[run_identity(request)];
    known = std::max({known, ranks, 1});
  }
  int64_t dumps = 0;
  for (const auto& [identity, ranks] : ranks_of_run) dumps += ranks;
  nlohmann::json budget = {{"limit_bytes", limit_bytes},
                           {"runs", ranks_of_run.size()},
                           {"per_run_bytes", limit_bytes / std::max<int64_t>(1, dumps)}};
  if (dumps > static_cast<int64_t>(ranks_of_run.size())) budget["rank_dumps"] = dumps;
  return budget;
}

void apply_dump_share(const State& state, RunSpec& spec) {
  if (state.dump_budget.is_object() && takes_dump_share(spec))
    spec.dump_request().max_bytes = state.dump_budget.at("per_run_bytes").get<int64_t>();
}

void record_dump_outcome(State& state, const EqualTensorFiles::Linked& linked) {
  if (!state.dump_budget.is_object()) return;
  int64_t written = 0;
  nlohmann::json left_out = nlohmann::json::array();
  for (const StepResult& step : state.steps)
    for (const RunRecord& run : step.runs)
      for (int rank = 0; rank < std::max(1, run.ranks) && run.from_step.empty(); ++rank) {  // shared: counted once
        const PluginStatus status = read_plugin_status(run.dir, rank);
        if (!status.dump.written) continue;
        written += status.dump.written_bytes;
        if (!status.dump.budget_reached) continue;
        nlohmann::json entry = {{"step", step.id},
                                {"run", run.name},
                                {"limit_bytes", status.dump_max_bytes()},
                                {"written_bytes", status.dump.written_bytes},
                                {"records", status.dump.records_over_budget}};
        if (run.ranks > 1) entry["rank"] = rank;
        left_out.push_back(std::move(entry));
      }
  state.dump_budget["written_bytes"] = written;
  state.dump_budget["left_out"] = left_out;
  const DirectoryUsage usage = directory_usage(state.run_dir);
  state.dump_budget["run_directory"] = {{"bytes", usage.total()},         {"dumps_bytes", usage.dumps},
                                        {"outputs_bytes", usage.outputs}, {"other_bytes", usage.other},
                                        {"linked_files", linked.files},   {"linked_bytes", linked.bytes}};
}

std::string size_text(const nlohmann::json& bytes) {
  if (!bytes.is_number()) return "?";
  if (bytes.get<double>() < (1 << 20)) return bytes.dump() + " bytes";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes.get<double>() / (1 << 20));
  return text;
}

namespace {

// The whole run directory against the budget: the final outputs each run keeps whole (the steps
// judge them) and the rest are outside the op dumps' shares.
std::string run_directory_text(const nlohmann::json& usage, const nlohmann::json& limit) {
  if (!usage.is_object() || !usage["bytes"].is_number() || !limit.is_number()) return "";
  std::string text = " The run directory holds " + size_text(usage["bytes"]) + " (op dumps " +
                     size_text(usage["dumps_bytes"]) + ", final outputs " + size_text(usage["outputs_bytes"]) +
                     ", the rest " + size_text(usage["other_bytes"]);
  if (usage.value("linked_files", 0) > 0)
    text += "; " + usage["linked_files"].dump() + " tensor files equal to one kept before are stored once, " +
            size_text(usage["linked_bytes"]) + " saved";
  const int64_t over = usage["bytes"].get<int64_t>() - limit.get<int64_t>();
  if (over <= 0) return text + "): within the budget.";
  return text + "): " + size_text(over) +
         " over the budget, the final outputs of every run being kept whole outside the op dumps' shares.";
}

}  // namespace

std::string dump_budget_text(const nlohmann::json& budget) {
  if (!budget.is_object()) return "";
  std::string text =
      "At most " + size_text(budget["limit_bytes"]) +
      " of tensor files for this diagnosis (defaults.dump_budget): " + size_text(budget["per_run_bytes"]) +
      " for each of its " + budget.value("rank_dumps", budget["runs"]).dump() + " op dump(s) keeping tensors" +
      (budget.contains("rank_dumps") ? " (" + budget["runs"].dump() + " runs, each rank of a run dumping its own)."
                                     : ".");
  if (budget.contains("written_bytes")) text += " The dumps wrote " + size_text(budget["written_bytes"]) + ".";
  if (!budget.contains("left_out")) return text;
  text += budget["left_out"].empty() ? " Every record kept its tensor."
                                     : " The budget was reached: these dumps kept statistics only of the records "
                                       "whose tensors no longer fit, and their rows were compared on statistics.";
  return text + run_directory_text(budget.value("run_directory", nlohmann::json()), budget["limit_bytes"]);
}

}  // namespace diagnose
