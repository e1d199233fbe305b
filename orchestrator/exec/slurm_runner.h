// The slurm runner: every run (each attempt) is one batch job. The job's script is
// generated into the run's directory and execs the run's argv, every argument quoted;
// sbatch gets the options as separate arguments, never through a shell. squeue and
// scontrol tell when a job ended and why; the job id goes into the state file at
// submission so that --resume waits for a job that outlived its engine.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/exec/runner.h"

namespace diagnose {

// The batch script of a run: exports the run's environment, then execs its argv. With
// spec.ranks > 1 through srun --ntasks, each rank with what torchrun gives it, from Slurm's
// variables: RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK, LOCAL_WORLD_SIZE (SLURM_PROCID, _NTASKS,
// _LOCALID, _NODEID, _STEP_TASKS_PER_NODE), MASTER_ADDR (127.0.0.1 in a one-node job, else the
// job's first node), MASTER_PORT (20000 + SLURM_JOB_ID % 20000), OMP_NUM_THREADS=1, each unless
// set; the plugin's own tools run as one process in a world of one rank (RANK 0, WORLD_SIZE 1).
std::string batch_script(const RunRequest& request, const RunnerSpec& spec);

// sbatch's argv for a run whose script is at `script_path`.
std::vector<std::string> sbatch_argv(const RunRequest& request, const RunnerSpec& spec, const std::string& job_name,
                                     const std::string& script_path);

// What Slurm says about a job (scontrol show job -o, or sacct as a fallback).
struct JobInfo {
  std::string name;
  std::string state;              // JobState: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
  std::string reason;             // Reason: why it waits or ended (None, TimeLimit, Resources, ...)
  std::string exit_code;          // "status:signal"
  double started = 0, ended = 0;  // seconds since the epoch; 0 when unknown
};
// Parses one line of `scontrol show job -o`.
JobInfo parse_scontrol_job(const std::string& line);
bool job_state_final(const std::string& state);
// A finished job's status, exit code or signal, and error in words.
void apply_final_job_state(const JobInfo& job, const std::string& job_id, RunRecord& record);

// Identifies the options that decide whether Slurm accepts a job (for checking each once).
std::string slurm_options_key(const RunnerSpec& spec);
// Missing commands, an unreachable controller, an unknown partition, a missing shared_dir;
// with `try_submission`, options sbatch --test-only rejects.
std::vector<RunnerProblem> slurm_problems(const RunnerSpec& spec, bool try_submission);

std::unique_ptr<Runner> make_slurm_runner(const RunnerSpec& spec, const std::string& step_id, int slots,
                                          double kill_grace_s);

}  // namespace diagnose
