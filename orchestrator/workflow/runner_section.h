// The `runner:` section of a workflow (top level, and a step's keys on top): which runner a
// step's runs go to, and its options. The runners themselves are orchestrator/exec/runner.h's.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

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

}  // namespace diagnose
