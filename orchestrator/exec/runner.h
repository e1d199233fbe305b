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

#include "orchestrator/engine/scheduler.h"
#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/schema.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

struct RunnerSpec {
  std::string kind = "local";
  std::string partition, account, qos;
  std::string time_limit;  // Slurm's --time text; empty: the run's timeout in whole minutes
  int nodes = 0;           // 0: Slurm's default
  int ranks = 1;           // > 1: one process per rank (rank_group.h; on Slurm through srun --ntasks)
  std::string gpus, gres;
  std::vector<std::string> extra_args;  // more sbatch options, passed as written
  int max_jobs = 0;                     // jobs queued or running at the same time; 0: the slots
  std::string shared_dir;               // the run directory must lie inside it (absolute)
  double poll_interval_s = 2;
  bool warm = true;  // local runner: fork the plugin's runs from a warm parent (warm_launcher.h)
  // Where each key was set in the workflow, for positioned errors; absent: the command line.
  std::map<std::string, YAML::Mark> marks;
};

// The command line's say, stronger than the workflow file's.
struct RunnerOverride {
  std::string kind, partition;
};

// A problem with a runner's configuration, and the key that causes it ("" for none).
struct RunnerProblem {
  std::string key, message;
};

Schema runner_schema();
// The runner a step uses: the workflow's section, the step's keys on top, then `override`.
RunnerSpec runner_for_step(const Workflow& workflow, const StepSpec& step, const RunnerOverride& override);
// Checks the schema cannot express (time_limit format, an empty shared_dir).
void check_runner_section(const YAML::Node& node, const std::string& where, Diagnostics& diagnostics);

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
