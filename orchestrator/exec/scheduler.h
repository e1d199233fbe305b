// Runs a step's processes, up to `slots` at the same time, each with its retries.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "orchestrator/exec/run_record.h"
#include "orchestrator/exec/run_request.h"

namespace diagnose {

struct SchedulerCallbacks {
  // All callbacks are called one at a time (under the scheduler's lock).
  std::function<void(size_t index, const RunRecord& record)> on_started;                   // status Running, pid known
  std::function<void(size_t index, const RunRecord& record)> on_finished;                  // final status
  std::function<void(size_t index, const std::string& line, bool from_stderr)> on_output;  // live tail
};

// Runs requests[i] for every i in `indexes`. Returns when all have ended, or, after an
// interrupt, when the running ones have stopped (the others stay Pending). `warm`: the plugin's
// runs are forked from a warm parent where they may be (orchestrator/exec/warm_launcher.h).
// `ranks` > 1: each run is a group of that many ranks (orchestrator/exec/rank_group.h), and
// takes that many of the slots.
void run_in_parallel(const std::vector<RunRequest>& requests, const std::vector<size_t>& indexes, int slots,
                     double kill_grace_s, const SchedulerCallbacks& callbacks, bool warm = false, int ranks = 1);

// Why a rank group's ranks start as processes (a run's launch_reason, and with `warm` the first
// line of its stderr.log): "2 ranks, each started as a process as torchrun starts them, not forked
// from the warm process although runner.warm is on: ...".
std::string rank_group_launch_reason(const std::vector<std::string>& argv, bool warm, int ranks);

// The record of a request before it runs.
RunRecord record_for(const RunRequest& request);

// Whether a run that ended so is started again while it has retries left.
bool worth_retrying(RunStatus status);
// A succeeded run whose declared outputs are missing becomes MissingOutputs.
void check_outputs(const RunRequest& request, RunRecord& record);

}  // namespace diagnose
