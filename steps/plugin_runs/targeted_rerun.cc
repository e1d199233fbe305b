#include "steps/plugin_runs/targeted_rerun.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/engine/state.h"
#include "steps/plugin_runs/plugin_run.h"

namespace diagnose {

std::vector<std::string> over_budget_region(const compare::CompareResult& compared, size_t limit) {
  std::vector<std::string> region;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) {
      if (region.size() >= limit) return region;
      // A final output is judged from outputs/, which always holds its tensors.
      if (row.spec.over_budget && row.verdict == compare::Verdict::Fail && !row.spec.final_output &&
          std::find(region.begin(), region.end(), row.spec.op_key) == region.end())
        region.push_back(row.spec.op_key);
    }
  return region;
}

std::string exact_op_key_pattern(const std::string& op_key) {
  std::string pattern = "^";
  for (unsigned char c : op_key) {
    // Python's re reads a backslash before punctuation as the character itself; letters and
    // digits stay bare (\d, \1 mean something), and so do the bytes of UTF-8 sequences.
    if (!std::isalnum(c) && c != '_' && c < 0x80) pattern += '\\';
    pattern += static_cast<char>(c);
  }
  return pattern + "$";
}

nlohmann::json TargetedRerun::to_json() const {
  return {{"ops", ops},
          {"runs", runs},
          {"filled", fill.filled},
          {"differed", fill.differed},
          {"missing", fill.missing},
          {"problems", problems}};
}

std::string TargetedRerun::text() const {
  std::string text = "targeted re-run (" + std::to_string(runs.size()) + " run(s) dumping only " +
                     std::to_string(ops.size()) + " op(s) whose rows failed on statistics, the dump budget being " +
                     "reached): " + std::to_string(fill.filled) + " record(s) filled in and judged on their tensors";
  if (fill.differed > 0)
    text += "; " + std::to_string(fill.differed) + " held other values than the first run (not filled: the run " +
            "is not repeatable)";
  if (fill.missing > 0) text += "; " + std::to_string(fill.missing) + " not dumped by the re-run";
  for (const std::string& problem : problems) text += "; " + problem;
  return text;
}

std::optional<TargetedRerun> rerun_region(const StepContext& context, const std::vector<RunRequest>& sides,
                                          const std::vector<std::string>& region) {
  std::vector<RunRequest> originals, reruns;
  std::vector<std::string> patterns;
  for (const std::string& op_key : region) patterns.push_back(exact_op_key_pattern(op_key));
  for (const RunRequest& side : sides) {
    if (!read_plugin_status(side.dir).dump.budget_reached) continue;
    std::optional<RunSpec> spec = read_run_spec(side.dir);
    if (!spec) continue;
    spec->dump_request().include = patterns;  // the same budget (dump.max_bytes) bounds the re-run
    originals.push_back(side);
    reruns.push_back(rerun_with_spec(context, side, side.name + "_region", *spec));
  }
  if (reruns.empty()) return std::nullopt;

  TargetedRerun rerun;
  rerun.ops = region;
  const std::set<std::string> op_keys(region.begin(), region.end());
  std::vector<RunRecord> records = context.run(reruns);
  for (size_t i = 0; i < reruns.size(); ++i) {
    rerun.runs.push_back(reruns[i].name);
    if (records[i].status != RunStatus::Succeeded) {
      rerun.problems.push_back("re-run " + reruns[i].name + " did not succeed: " + records[i].error);
      continue;
    }
    compare::DumpFill fill = compare::fill_from(originals[i].dump_dir, reruns[i].dump_dir, op_keys, reruns[i].name);
    rerun.fill.filled += fill.filled;
    rerun.fill.differed += fill.differed;
    rerun.fill.missing += fill.missing;
    if (!fill.error.empty()) rerun.problems.push_back("filling " + originals[i].name + "'s dump: " + fill.error);
  }
  return rerun;
}

}  // namespace diagnose
