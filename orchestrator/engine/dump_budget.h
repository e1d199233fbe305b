// The byte budget of one diagnosis's dumps (defaults.dump_budget). The op dumps that keep tensor
// files, among the plugin runs the steps plan (StepKind::planned_runs, after shared_runs.h merged
// them), share it evenly: each such run's spec gets dump.max_bytes = budget / their number, so the
// plugin keeps statistics only past it (docs/dump-format.md, "budget"). A run that sets its own
// dump.max_bytes keeps it and takes no share. After the steps, the runs' status.json say what
// the dumps wrote and which records the budget left without tensors, for the reports.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/equal_tensor_files.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"
#include "runspec/run_spec.h"

namespace diagnose {

// State::dump_budget before any step: {limit_bytes, runs, per_run_bytes}, `runs` being the
// distinct planned runs that take a share; null when `limit_bytes` is 0 (no limit). A run of N
// ranks (runner.ranks, by step in `ranks_by_step`; a step not there has one) is N dumps, one per
// rank process, each a share: then `rank_dumps` counts the shares and per_run_bytes, what each
// dump may keep, is limit_bytes / rank_dumps, so all ranks together stay within the limit.
nlohmann::json plan_dump_budget(int64_t limit_bytes, const std::vector<PlannedRun>& planned, const SharedRuns& shared,
                                const std::map<std::string, int>& ranks_by_step = {});

// "340.0 MiB", "512 bytes"; "?" where `bytes` is not a number.
std::string size_text(const nlohmann::json& bytes);

// Gives a run that takes a share its dump.max_bytes (no change without a planned budget).
void apply_dump_share(const State& state, RunSpec& spec);

// Adds the outcome to state.dump_budget from each run's status.json (and each further rank's
// status_rank{R}.json): written_bytes over the distinct runs, and left_out, one entry per run (per
// rank of a multi-rank run, with its `rank`) whose budget was reached
// ({step, run, limit_bytes, written_bytes, records}: records kept as statistics only); and
// run_directory, what the whole run directory holds (directory_usage, each file once: {bytes,
// dumps_bytes, outputs_bytes, other_bytes}) and what `linked` stored once ({linked_files,
// linked_bytes}), the final outputs and the rest being outside the op dumps' shares.
void record_dump_outcome(State& state, const EqualTensorFiles::Linked& linked = {});

// State::dump_budget in words, for the reports (beside a table of its left_out); empty for null.
std::string dump_budget_text(const nlohmann::json& budget);

}  // namespace diagnose
