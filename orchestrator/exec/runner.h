// Where a step's runs execute: `local` (processes of this machine, scheduler.h) or
// `slurm` (one batch job per run, slurm_runner.h). Chosen by the workflow's `runner:`
// section, a step's own `runner:` on top of it, and --runner/--partition on top of both.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "orchestrator/exec/scheduler.h"
#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/runner_section.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

// How far check_runners goes: the file alone; also asking Slurm (commands on PATH, the
// controller, partitions); also a trial submission (sbatch --test-only).
enum class RunnerCheck { File, Cluster, Submission };

// Problems with the runners the workflow's steps would use, found before any work starts:
// bad time limits, missing Slurm commands, unknown partitions, a
// shared_dir that does not exist, options Slurm rejects. Each is reported at the key
// that caused it, or for the whole file.
void check_runners(const Workflow& workflow, const RunnerOverride& override, RunnerCheck depth,
                   Diagnostics& diagnostics);

class Runner {
 public:
  virtual ~Runner() = default;
  // Runs requests[i] for every i in `indexes`, like run_in_parallel. `attach` holds, by
  // request index, records of an earlier invocation whose job may still be running: the
  // runner waits for that job instead of starting the request again.
  virtual void run(const std::vector<RunRequest>& requests, const std::vector<size_t>& indexes,
                   const std::map<size_t, RunRecord>& attach, const SchedulerCallbacks& callbacks) = 0;
};

std::unique_ptr<Runner> make_runner(const RunnerSpec& spec, const std::string& step_id, int slots, double kill_grace_s);

}  // namespace diagnose
