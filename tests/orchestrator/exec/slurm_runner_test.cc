// The slurm runner's parts that need no cluster: the generated batch script (run by a
// real /bin/sh), sbatch's arguments, Slurm's job states, and the runner checks of
// `diagnose validate` / `diagnose run` on a machine without Slurm. The runner against a
// real one-node cluster: tests/slurm (the "Slurm runner" stage of scripts/test.sh).
#include <gtest/gtest.h>

#include "orchestrator/exec/slurm_runner.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

TEST(SlurmBatchScript, ShellRunsExactlyTheRunsArgvAndEnvironment) {
  TempDir dir;
  std::vector<std::string> awkward = {"plain",     "two words", "it's",     "\"double\"", "$HOME", "`id`",
                                      "$(id)",     "a\nb",      "",         "--",         "*",     "back\\slash",
                                      "; rm -f x", "tab\there", "\xff\xfe", "%j"};
  RunRequest request;
  request.name = "main";
  request.argv = {python(), "-c",
                  "import json, os, sys\n"
                  "print(json.dumps({'argv': [a.encode('utf-8', 'surrogateescape').hex() for a in sys.argv[1:]],"
                  " 'env': os.environ['ODD'], 'rank': os.environ.get('RANK')}))"};
  request.argv.insert(request.argv.end(), awkward.begin(), awkward.end());
  request.env = {{"ODD", "x'y \"$z\" `w`\nnext"}};
  std::string script = dir / "job.sh";
  write_text(script, batch_script(request, RunnerSpec{}));

  std::string out = dir / "out.json";
  ASSERT_EQ(std::system(("/bin/sh " + script + " > " + out).c_str()), 0) << read_text(script);
  nlohmann::json printed = read_json(out);
  ASSERT_EQ(printed["argv"].size(), awkward.size());
  for (size_t i = 0; i < awkward.size(); ++i) {
    std::string hex;
    for (unsigned char c : awkward[i]) {
      char pair[3];
      std::snprintf(pair, sizeof pair, "%02x", c);
      hex += pair;
    }
    EXPECT_EQ(printed["argv"][i], hex) << "argument " << i;
  }
  EXPECT_EQ(printed["env"], "x'y \"$z\" `w`\nnext");
  EXPECT_TRUE(printed["rank"].is_null());
}

TEST(SlurmBatchScript, RanksStartThroughSrunWithRankVariables) {
  RunRequest request;
  request.argv = {"python3", "model.py"};
  RunnerSpec spec;
  spec.ranks = 4;
  std::string script = batch_script(request, spec);
  EXPECT_NE(script.find("exec srun --ntasks=4 --kill-on-bad-exit=1 /bin/sh -c"), std::string::npos) << script;
  EXPECT_NE(script.find("RANK=\"$SLURM_PROCID\""), std::string::npos);
  EXPECT_NE(script.find("WORLD_SIZE=\"$SLURM_NTASKS\""), std::string::npos);
  EXPECT_NE(script.find("diagnose-rank python3 model.py\n"), std::string::npos) << script;
}

// Runs a batch script under a stand-in srun that starts its command as `tasks` tasks of one node
// (SLURM_PROCID...), each task's output in task{R}.out; returns every task's output, in order.
std::string run_with_stand_in_srun(const TempDir& dir, const std::string& script, int tasks,
                                   const std::string& job_env) {
  write_text(dir / "bin/srun",
             "#!/bin/sh\nwhile [ \"${1#--}\" != \"$1\" ]; do shift; done\n"
             "i=0; while [ $i -lt " +
                 std::to_string(tasks) +
                 " ]; do\n"
                 "  SLURM_PROCID=$i SLURM_LOCALID=$i SLURM_NODEID=0 SLURM_NTASKS=" +
                 std::to_string(tasks) + " SLURM_STEP_TASKS_PER_NODE='" + std::to_string(tasks) +
                 "(x1)' \"$@\" > task$i.out || exit 1\n  i=$((i + 1))\ndone\n");
  write_text(dir / "job.sh", script);
  const std::string command =
      "cd " + dir.path() + " && chmod +x bin/srun && PATH=" + dir.path() + "/bin:$PATH " + job_env + " /bin/sh job.sh";
  EXPECT_EQ(std::system(command.c_str()), 0) << script;
  std::string out;
  for (int r = 0; r < tasks; ++r) out += read_text(dir / ("task" + std::to_string(r) + ".out"));
  return out;
}

TEST(SlurmBatchScript, EachRankGetsTorchrunsVariablesFromSlurms) {
  TempDir dir;
  RunRequest request;
  request.argv = {"sh", "-c",
                  "echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT "
                  "$OMP_NUM_THREADS"};
  RunnerSpec spec;
  spec.ranks = 2;
  EXPECT_EQ(run_with_stand_in_srun(dir, batch_script(request, spec), 2,
                                   "SLURM_JOB_ID=1234 SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=n1"),
            "0 2 0 2 0 127.0.0.1 21234 1\n1 2 1 2 0 127.0.0.1 21234 1\n");
  // what the run sets stays
  request.env = {{"MASTER_PORT", "29500"}, {"OMP_NUM_THREADS", "4"}};
  EXPECT_EQ(run_with_stand_in_srun(dir, batch_script(request, spec), 2, "SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=1"),
            "0 2 0 2 0 127.0.0.1 29500 4\n1 2 1 2 0 127.0.0.1 29500 4\n");
}

TEST(SlurmBatchScript, ThePluginsToolsRunOnceInAWorldOfOneRank) {
  TempDir dir;
  // `sh -m diagnose_pytorch ops ...` is the plugin's ops command to the runner; ./diagnose_pytorch stands in
  write_text(dir / "diagnose_pytorch",
             "echo $RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $MASTER_PORT ${SLURM_PROCID:-none}\n");
  RunRequest request;
  request.argv = {"sh", "-m", "diagnose_pytorch", "ops", "model.py"};
  RunnerSpec spec;
  spec.ranks = 2;
  const std::string script = batch_script(request, spec);
  EXPECT_EQ(script.find("srun"), std::string::npos) << script;
  write_text(dir / "job.sh", script);
  const std::string out = dir / "out";
  ASSERT_EQ(std::system(("cd " + dir.path() + " && SLURM_JOB_ID=40001 /bin/sh job.sh > out").c_str()), 0);
  EXPECT_EQ(read_text(out), "0 1 0 127.0.0.1 20001 none\n");
}

TEST(SlurmSubmission, SbatchArgumentsFollowTheRunnerAndTheTimeout) {
  RunRequest request;
  request.name = "trial-3";
  request.cwd = "/work/model";
  request.dir = "/runs/100%/steps/bisect/trial-3";
  request.timeout_s = 61;
  RunnerSpec spec;
  spec.partition = "npu";
  spec.account = "proj";
  spec.qos = "high";
  spec.nodes = 2;
  spec.ranks = 16;
  spec.gres = "npu:8";
  spec.extra_args = {"--mem=64G", "--exclusive"};
  std::vector<std::string> argv = sbatch_argv(request, spec, "diagnose-bisect-trial-3", "/runs/job.sh");
  std::vector<std::string> expected = {"sbatch",
                                       "--parsable",
                                       "--job-name=diagnose-bisect-trial-3",
                                       "--chdir=/work/model",
                                       "--output=/runs/100%%/steps/bisect/trial-3/stdout.log",
                                       "--error=/runs/100%%/steps/bisect/trial-3/stderr.log",
                                       "--open-mode=truncate",
                                       "--no-requeue",
                                       "--time=2",
                                       "--partition=npu",
                                       "--account=proj",
                                       "--qos=high",
                                       "--nodes=2",
                                       "--ntasks=16",
                                       "--gres=npu:8",
                                       "--mem=64G",
                                       "--exclusive",
                                       "/runs/job.sh"};
  EXPECT_EQ(argv, expected);

  spec.time_limit = "1-00:00:00";
  argv = sbatch_argv(request, spec, "n", "s");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--time=1-00:00:00"), argv.end());
  request.timeout_s = 0;
  spec.time_limit.clear();
  argv = sbatch_argv(request, spec, "n", "s");
  EXPECT_TRUE(std::none_of(argv.begin(), argv.end(), [](const std::string& a) { return a.rfind("--time", 0) == 0; }));
}

RunRecord finished_as(const std::string& scontrol_line) {
  RunRecord record;
  apply_final_job_state(parse_scontrol_job(scontrol_line), "42", record);
  return record;
}

TEST(SlurmJobState, FinalStatesBecomeRunStatusesWithSlurmsReason) {
  JobInfo job = parse_scontrol_job(
      "JobId=42 JobName=diagnose-s-main UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) "
      "ExitCode=0:15 RunTime=00:01:31 StartTime=2026-11-29T22:30:53 EndTime=2026-11-29T22:32:24 "
      "WorkDir=/a dir/with spaces StdOut=/x");
  EXPECT_EQ(job.name, "diagnose-s-main");
  EXPECT_EQ(job.state, "TIMEOUT");
  EXPECT_EQ(job.reason, "TimeLimit");
  EXPECT_DOUBLE_EQ(job.ended - job.started, 91);

  RunRecord timed_out = finished_as("JobId=42 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15");
  EXPECT_EQ(timed_out.status, RunStatus::TimedOut);
  EXPECT_EQ(timed_out.error, "Slurm job 42 was stopped at its time limit (TIMEOUT, reason TimeLimit)");
  EXPECT_EQ(timed_out.job_id, "42");

  RunRecord failed = finished_as("JobId=42 JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0");
  EXPECT_EQ(failed.status, RunStatus::Failed);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed.error, "exit status 3");

  RunRecord killed = finished_as("JobId=42 JobState=FAILED Reason=NonZeroExitCode ExitCode=0:9");
  EXPECT_EQ(killed.status, RunStatus::Crashed);
  EXPECT_EQ(killed.signal, 9);

  RunRecord oom = finished_as("JobId=42 JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125");
  EXPECT_EQ(oom.status, RunStatus::Crashed);
  EXPECT_EQ(oom.error, "Slurm job 42 ran out of memory (OUT_OF_MEMORY, reason OutOfMemory)");

  for (const char* state : {"NODE_FAIL", "PREEMPTED", "CANCELLED", "BOOT_FAIL", "DEADLINE"}) {
    RunRecord r = finished_as(std::string("JobId=42 JobState=") + state + " Reason=None ExitCode=0:0");
    EXPECT_EQ(r.status, RunStatus::Crashed) << state;
    EXPECT_NE(r.error.find(std::string("(") + state + ")"), std::string::npos) << r.error;
  }
  EXPECT_EQ(finished_as("JobId=42 JobState=COMPLETED Reason=None ExitCode=0:0").status, RunStatus::Succeeded);
  for (const char* waiting : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUED"})
    EXPECT_FALSE(job_state_final(waiting)) << waiting;
}

std::vector<std::string> file_errors(const std::string& yaml, RunnerCheck depth, const RunnerOverride& over = {}) {
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(yaml, "wf.yaml", diagnostics);
  if (workflow) check_runners(*workflow, over, depth, diagnostics);
  std::vector<std::string> messages;
  for (const Diagnostic& d : diagnostics.list()) messages.push_back(format_diagnostic(d));
  return messages;
}

TEST(RunnerSection, SchemaAndFileChecksGivePositions) {
  EXPECT_EQ(file_errors("model: {argv: [m]}\nrunner: {kind: slurn}\nsteps: [{id: a, kind: run}]\n", RunnerCheck::File),
            std::vector<std::string>{"wf.yaml:2:16: error: runner.kind: unknown value 'slurn' (did you mean "
                                     "'slurm'?); expected one of: local, slurm"});
  std::vector<std::string> errors = file_errors(
      "model: {argv: [m]}\nsteps:\n  - id: a\n    kind: run\n    runner: {partiton: gpu}\n", RunnerCheck::File);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("wf.yaml:5:14: error: steps.a.runner: unknown key 'partiton'", 0), 0u) << errors[0];
  EXPECT_EQ(file_errors("model: {argv: [m]}\nrunner:\n  kind: slurm\n  time_limit: 1h\nsteps: [{id: a, kind: run}]\n",
                        RunnerCheck::File),
            std::vector<std::string>{"wf.yaml:4:15: error: runner.time_limit: '1h' is not a Slurm time (minutes, "
                                     "hours:minutes:seconds, days-hours[:minutes[:seconds]] or UNLIMITED)"});
  // the local runner starts a rank group (rank_group.h)
  EXPECT_TRUE(
      file_errors("model: {argv: [m]}\nrunner: {ranks: 2}\nsteps: [{id: a, kind: run}]\n", RunnerCheck::File).empty());
  EXPECT_TRUE(file_errors("model: {argv: [m]}\nrunner:\n  kind: slurm\n  time_limit: 2-12:30\n  max_jobs: 8\n"
                          "steps:\n  - {id: a, kind: run, runner: {kind: local}}\n",
                          RunnerCheck::File)
                  .empty());
}

TEST(RunnerSection, StepKeysOverrideTheWorkflowAndTheCommandLineOverridesBoth) {
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(
      "model: {argv: [m]}\nrunner: {kind: slurm, partition: cpu, extra_args: [--mem=1G], max_jobs: 4}\n"
      "steps:\n  - {id: a, kind: run}\n  - {id: b, kind: run, runner: {partition: gpu, gpus: '2'}}\n",
      "wf.yaml", diagnostics);
  ASSERT_TRUE(workflow) << diagnostics.list()[0].message;
  RunnerSpec a = runner_for_step(*workflow, workflow->steps[0], {});
  RunnerSpec b = runner_for_step(*workflow, workflow->steps[1], {});
  EXPECT_EQ(a.kind, "slurm");
  EXPECT_EQ(a.partition, "cpu");
  EXPECT_EQ(b.partition, "gpu");
  EXPECT_EQ(b.gpus, "2");
  EXPECT_EQ(b.max_jobs, 4);
  EXPECT_EQ(b.extra_args, std::vector<std::string>{"--mem=1G"});
  RunnerSpec forced = runner_for_step(*workflow, workflow->steps[1], {"local", "debug"});
  EXPECT_EQ(forced.kind, "local");
  EXPECT_EQ(forced.partition, "debug");
  EXPECT_EQ(forced.marks.count("partition"), 0u);
}

// No Slurm on PATH: `diagnose validate --runner` and `diagnose run` say so before any work.
TEST(RunnerSection, MissingSlurmCommandsAreReportedBeforeAnyWork) {
  TempDir dir;
  write_text(dir / "wf.yaml", "model: {argv: [" + python() +
                                  ", -c, 'open(\"ran\", \"w\")']}\nrunner:\n  kind: slurm\n"
                                  "steps: [{id: a, kind: run}]\n");
  std::vector<std::pair<std::string, std::string>> no_slurm = {{"PATH", "/nonexistent"}};
  Finished validated = run_diagnose({"validate", "--runner", "wf.yaml"}, dir.path(), no_slurm);
  EXPECT_EQ(validated.code, 2);
  EXPECT_NE(validated.err.find("wf.yaml:3:9: error: sbatch not found on PATH"), std::string::npos) << validated.err;
  Finished plain = run_diagnose({"validate", "wf.yaml"}, dir.path(), no_slurm);
  EXPECT_EQ(plain.code, 0) << plain.err;

  Finished ran = run_diagnose({"run", "wf.yaml"}, dir.path(), no_slurm);
  EXPECT_EQ(ran.code, 2);
  EXPECT_NE(ran.err.find("sbatch not found on PATH"), std::string::npos) << ran.err;
  EXPECT_FALSE(fs::exists(dir / "runs"));
  EXPECT_FALSE(fs::exists(dir / "ran"));

  Finished local = run_diagnose({"run", "--runner", "local", "wf.yaml"}, dir.path(), no_slurm);
  EXPECT_EQ(local.code, 0) << local.err;
  EXPECT_TRUE(fs::exists(dir / "ran"));
}

}  // namespace
}  // namespace diagnose
