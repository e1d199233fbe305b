// End to end: the diagnose binary runs workflows whose "models" are the stand-in
// scripts in scripts/, in real processes, and leaves real run directories.
#include <gtest/gtest.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "orchestrator/exec/rank_group.h"
#include "orchestrator/exec/scheduler.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

// The stand-in's eager and graph runs compared, then an assert that runs only when the
// comparison fails.
std::string eager_graph_compare(const std::string& graph_args) {
  return stand_in_model_yaml() + "steps:\n" + stand_in_comparison_steps(graph_args, "localized_op_defect") +
         R"yaml(  - id: explain
    kind: assert
    when: steps.compare.status == fail
    fail_if: steps.compare.failed > 100
)yaml";
}

TEST(EndToEnd, PassingFlowExitsZeroWithNoProblem) {
  TempDir dir;
  write_text(dir / "wf.yaml", "name: clean\n" + eager_graph_compare("--mode, graph"));
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string run_dir = only_run_dir(dir / "runs");
  ASSERT_FALSE(run_dir.empty());
  EXPECT_NE(fs::path(run_dir).filename().string().find("-clean"), std::string::npos);
  for (const char* file : {"workflow.yaml", "resolved.json", "state.json", "report.md", "report.json", "junit.xml",
                           "steps/eager/stdout.log", "steps/eager/dump/04_output.npy", "steps/graph/stderr.log"})
    EXPECT_TRUE(fs::exists(run_dir + "/" + file)) << file;
  EXPECT_EQ(read_text(run_dir + "/workflow.yaml"), read_text(dir / "wf.yaml"));
  nlohmann::json resolved = read_json(run_dir + "/resolved.json");
  EXPECT_EQ(resolved["model"]["cwd"], dir.path());
  EXPECT_EQ(resolved["steps"][2]["diagnoses"], "localized_op_defect");

  nlohmann::json report = read_json(run_dir + "/report.json");
  EXPECT_EQ(report["verdict"]["category"], "no_precision_problem");
  EXPECT_EQ(report["exit_code"], 0);
  EXPECT_EQ(report["complete"], true);
  EXPECT_EQ(report["steps"][2]["status"], "pass");
  EXPECT_EQ(report["steps"][2]["metrics"]["compared"], 5);
  EXPECT_EQ(report["steps"][2]["metrics"]["failed"], 0);
  EXPECT_EQ(report["steps"][3]["status"], "skipped");
  EXPECT_EQ(report["steps"][0]["runs"][0]["cwd"], dir.path());
  EXPECT_EQ(report["steps"][0]["runs"][0]["dump_dir"], run_dir + "/steps/eager/dump");
  // A line per step, then the verdict block: piped, so no colour.
  EXPECT_NE(r.out.find("\n\n✓ No precision problem found\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[3/4] compare"), std::string::npos) << r.err;
}

TEST(EndToEnd, FailingCompareProducesAVerdictNamingTheOp) {
  TempDir dir;
  write_text(dir / "wf.yaml", eager_graph_compare("--perturb, relu"));
  Finished r = run_diagnose({"wf.yaml", "--quiet"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.err, "");  // --quiet
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json report = read_json(run_dir + "/report.json");
  const nlohmann::json& verdict = report["verdict"];
  EXPECT_EQ(verdict["category"], "localized_op_defect");
  EXPECT_EQ(verdict["step"], "compare");
  EXPECT_EQ(verdict["culprit"], "02_relu");
  EXPECT_EQ(report["steps"][2]["metrics"]["failed"], 3);
  EXPECT_EQ(report["steps"][2]["metrics"]["first_failing_op"], "02_relu");
  ASSERT_FALSE(verdict["reproduce"].empty());
  EXPECT_EQ(verdict["reproduce"].back().get<std::string>().rfind(
                "diagnose compare -gp " + run_dir + "/steps/eager/dump -mp ", 0),
            0u);
  bool has_table = false, has_csv = false;
  for (const auto& e : verdict["evidence"]) {
    has_table |= e["kind"] == "table" && e["value"][0]["op"] == "02_relu" && e["value"].size() == 3;
    has_csv |= e["kind"] == "file" && fs::exists(e["path"].get<std::string>()) &&
               e["path"].get<std::string>().find(".csv") != std::string::npos;
  }
  EXPECT_TRUE(has_table) << verdict["evidence"].dump(1);
  EXPECT_TRUE(has_csv);
  // The when: condition held, so the assert ran (and passed: 3 <= 100).
  EXPECT_EQ(report["steps"][3]["status"], "pass");
  // --quiet: the verdict block alone, naming the op first, then the numbers that decided it.
  EXPECT_EQ(r.out.rfind("✗ Defect localised to an op, not caused by fusion: 02_relu\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n  how sure   3 of "), std::string::npos) << r.out;
  EXPECT_NE(read_text(run_dir + "/report.md").find("Culprit: `02_relu`"), std::string::npos);
}

TEST(EndToEnd, StepSkippedByWhenIsSkippedEverywhere) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model_yaml() + R"yaml(
steps:
  - id: first
    kind: run
    args: [--dump, "${run.dump_dir}"]
  - id: only_if_broken
    kind: run
    when: steps.first.status == fail
    args: [--dump, "${run.dump_dir}", --log, never-written.log]
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json report = read_json(run_dir + "/report.json");
  EXPECT_EQ(report["steps"][1]["status"], "skipped");
  EXPECT_EQ(report["steps"][1]["summary"], "skipped: `steps.first.status == fail` is false");
  EXPECT_TRUE(report["steps"][1]["runs"].empty());
  EXPECT_FALSE(fs::exists(dir / "never-written.log"));

  boost::property_tree::ptree junit;
  boost::property_tree::read_xml(run_dir + "/junit.xml", junit);
  const auto& suite = junit.get_child("testsuites.testsuite");
  EXPECT_EQ(suite.get<int>("<xmlattr>.tests"), 2);
  EXPECT_EQ(suite.get<int>("<xmlattr>.skipped"), 1);
  std::vector<std::string> names;
  for (const auto& [tag, node] : suite) {
    if (tag != "testcase") continue;
    names.push_back(node.get<std::string>("<xmlattr>.name"));
    EXPECT_EQ(node.count("skipped"), names.back() == "only_if_broken" ? 1u : 0u);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"first", "only_if_broken"}));
}

TEST(EndToEnd, CrashingModelExitsThreeWithItsLogTailInTheReport) {
  TempDir dir;
  write_text(dir / "wf.yaml", R"yaml(
model:
  argv: [sh, )yaml" + script("crash.sh") +
                                  R"yaml(]
steps:
  - {id: model, kind: run}
  - {id: after, kind: run}
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 3) << r.out << r.err;
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json report = read_json(run_dir + "/report.json");
  EXPECT_EQ(report["verdict"]["category"], "inconclusive");
  const nlohmann::json& run = report["steps"][0]["runs"][0];
  EXPECT_EQ(run["status"], "crashed");
  EXPECT_EQ(run["signal"], SIGSEGV);
  EXPECT_EQ(run["exit_code"], nullptr);
  EXPECT_NE(run["log_tail"].get<std::string>().find("Fatal Python error: Segmentation fault"), std::string::npos);
  EXPECT_EQ(report["steps"][1]["status"], "skipped");  // on_failure: stop is the default
  std::string markdown = read_text(run_dir + "/report.md");
  EXPECT_NE(markdown.find("  File \"model.py\", line 42 in forward"), std::string::npos) << markdown;
  EXPECT_NE(r.out.find("| Fatal Python error: Segmentation fault"), std::string::npos) << r.out;
}

TEST(EndToEnd, ModelFailingWithAnExceptionIsAnInfrastructureFailure) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model_yaml() + R"yaml(
steps:
  - id: model
    kind: run
    args: [--dump, "${run.dump_dir}", --fail-with-exception]
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 3) << r.out << r.err;
  nlohmann::json report = read_json(only_run_dir(dir / "runs") + "/report.json");
  EXPECT_EQ(report["steps"][0]["runs"][0]["exit_code"], 1);
  EXPECT_EQ(report["steps"][0]["summary"], "model run failed: main: exit status 1");
  EXPECT_NE(report["steps"][0]["runs"][0]["log_tail"].get<std::string>().find("RuntimeError: stand-in model crashed"),
            std::string::npos);
}

TEST(EndToEnd, ARankThatCrashesFailsItsRankGroupWithEveryRanksLogInTheReport) {
  TempDir dir;
  write_text(dir / "wf.yaml", R"yaml(
model:
  shell: 'if [ "$RANK" = 1 ]; then exec sh )yaml" +
                                  script("crash.sh") +
                                  R"yaml(; fi; echo "rank $RANK of $WORLD_SIZE waits in all_reduce"; exec sleep 100'
runner: {ranks: 2}
steps:
  - {id: model, kind: run}
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 3) << r.out << r.err;
  nlohmann::json report = read_json(only_run_dir(dir / "runs") + "/report.json");
  const nlohmann::json& run = report["steps"][0]["runs"][0];
  EXPECT_EQ(run["status"], "crashed");
  EXPECT_EQ(run["signal"], SIGSEGV);
  EXPECT_EQ(run["error"],
            "rank 1: killed by signal 11 (Segmentation fault), the first rank to fail; rank 0: killed by signal 15 "
            "(Terminated) after rank 1 failed");
  std::map<std::string, std::string> logs;
  for (const nlohmann::json& e : report["steps"][0]["evidence"])
    if (e["kind"] == "log") logs[e["name"]] = e["value"];
  EXPECT_EQ(logs["main rank 0 stdout (last lines)"], "rank 0 of 2 waits in all_reduce");
  EXPECT_EQ(logs["main rank 1 stdout (last lines)"], "loading weights");
  EXPECT_NE(logs["main rank 1 stderr (last lines)"].find("Segmentation fault"), std::string::npos);
}

TEST(EndToEnd, ARankGroupOfThePluginsRunSaysWhyItsRanksAreNotForkedFromTheWarmProcess) {
  TempDir dir;
  // `sh -m diagnose_pytorch run model.py` looks like the plugin's run to the warm launcher and
  // runs ./diagnose_pytorch, a stand-in without torch
  write_text(dir / "diagnose_pytorch", "echo rank $RANK of $WORLD_SIZE\n");
  write_text(dir / "wf.yaml", R"yaml(
model:
  argv: [sh, -m, diagnose_pytorch, run, model.py]
runner: {ranks: 2, warm: true}
steps:
  - {id: model, kind: run}
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json run = read_json(only_run_dir(dir / "runs") + "/report.json")["steps"][0]["runs"][0];
  EXPECT_EQ(run["launch"], "process");
  const std::string reason = run["launch_reason"];
  EXPECT_EQ(reason.rfind("2 ranks, each started as a process as torchrun starts them, not forked from the warm "
                         "process although runner.warm is on: it forks one process per run",
                         0),
            0u)
      << reason;
  const std::string log = read_text(run["stderr"]);
  EXPECT_EQ(log.substr(0, log.find('\n')), "diagnose: " + reason);
  EXPECT_EQ(read_text(rank_log_path(run["stdout"], 1)), "rank 1 of 2\n");
  EXPECT_EQ(
      rank_group_launch_reason({"sh", "-c", "x"}, true, 2),
      "2 ranks, each started as a process as torchrun starts them; not a plugin command (a shell: or argv: model)");
  EXPECT_EQ(rank_group_launch_reason({"python", "-m", "diagnose_pytorch", "run", "m.py"}, false, 4),
            "4 ranks, each started as a process as torchrun starts them; runner.warm is off");
}

// One run of scripts/hang.sh (which writes its pids to pids and never ends) with `model_extra`
// in the model section and `kill_grace` seconds between SIGTERM and SIGKILL.
std::string hanging_workflow(const std::string& model_extra, const std::string& kill_grace) {
  return "model:\n  argv: [sh, " + script("hang.sh") + ", \"${workflow_dir}/pids\"]\n" + model_extra +
         "defaults:\n  kill_grace: " + kill_grace + "\nsteps:\n  - {id: hang, kind: run}\n";
}

TEST(EndToEnd, HangingModelIsKilledWithItsChildrenAtTheTimeout) {
  TempDir dir;
  write_text(dir / "wf.yaml", hanging_workflow("  timeout: 1\n", "0.5"));
  auto start = std::chrono::steady_clock::now();
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_LT(seconds, 10);
  std::istringstream pids(read_text(dir / "pids"));
  pid_t shell = 0, child = 0;
  pids >> shell >> child;
  ASSERT_GT(shell, 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(wait_until([&] { return process_gone(shell) && process_gone(child); }, 2))
      << "left behind: " << shell << " " << child;
  nlohmann::json run = read_json(only_run_dir(dir / "runs") + "/report.json")["steps"][0]["runs"][0];
  EXPECT_EQ(run["status"], "timed_out");
  EXPECT_EQ(run["signal"], SIGKILL);  // it ignored SIGTERM
  EXPECT_GE(run["duration_s"].get<double>(), 1.0);
}

// Start and end times written by two runs of one step.
struct Interval {
  double start = 0, end = 0;
};
std::map<std::string, Interval> intervals(const std::string& log) {
  std::map<std::string, Interval> out;
  std::istringstream lines(read_text(log));
  std::string mode, event;
  double time;
  int pid;
  while (lines >> mode >> event >> time >> pid) (event == "start" ? out[mode].start : out[mode].end) = time;
  return out;
}

const char* kTwoSlowRuns = R"yaml(
defaults:
  slots: 2
steps:
  - id: both
    kind: run
    runs:
      a: {args: [--mode, a, --sleep, "2", --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]}
      b: {args: [--mode, b, --sleep, "2", --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]}
)yaml";

TEST(EndToEnd, RunsOfAStepOverlapUpToTheSlots) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model_yaml() + kTwoSlowRuns);
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto times = intervals(dir / "times.log");
  ASSERT_EQ(times.size(), 2u);
  EXPECT_LT(times["a"].start, times["b"].end);
  EXPECT_LT(times["b"].start, times["a"].end);
  EXPECT_TRUE(fs::exists(only_run_dir(dir / "runs") + "/steps/both/a/dump/00_embedding.npy"));
  EXPECT_TRUE(fs::exists(only_run_dir(dir / "runs") + "/steps/both/b/stdout.log"));

  TempDir sequential;
  write_text(sequential / "wf.yaml", stand_in_model_yaml() + kTwoSlowRuns);
  ASSERT_EQ(run_diagnose({"wf.yaml", "--slots", "1"}, sequential.path()).code, 0);
  auto one_slot = intervals(sequential / "times.log");
  EXPECT_TRUE(one_slot["a"].end <= one_slot["b"].start || one_slot["b"].end <= one_slot["a"].start);
}

std::string resumable_workflow() {
  return stand_in_model_yaml() + R"yaml(
steps:
  - id: quick
    kind: run
    args: [--mode, quick, --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]
  - id: slow
    kind: run
    args: [--mode, slow, --sleep, "${env.SLOW_SECONDS}", --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]
)yaml";
}

size_t count_lines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Sends `signal` to the engine once resumable_workflow()'s slow run has started; false when it
// did not start within 20 s.
bool signal_once_slow_run_started(DiagnoseProcess& engine, const TempDir& dir, int signal) {
  if (!wait_until([&] { return count_lines(read_text(dir / "times.log"), "slow start") == 1; }, 20)) return false;
  ::kill(engine.pid(), signal);
  return true;
}

// The slow run's process (the last word of times.log).
pid_t slow_run_pid(const TempDir& dir) {
  std::string log = read_text(dir / "times.log");
  return std::stoi(log.substr(log.rfind(' ') + 1));
}

TEST(EndToEnd, ResumeAfterAKilledEngineRerunsOnlyWhatWasMissing) {
  TempDir dir;
  write_text(dir / "wf.yaml", resumable_workflow());
  {
    DiagnoseProcess engine({"wf.yaml"}, dir.path(), {{"SLOW_SECONDS", "60"}});
    ASSERT_TRUE(signal_once_slow_run_started(engine, dir, SIGKILL));
    engine.wait();
  }
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json state = read_json(run_dir + "/state.json");
  EXPECT_EQ(state["steps"][0]["status"], "pass");
  EXPECT_EQ(state["steps"][1]["status"], "pending");
  EXPECT_EQ(state["steps"][1]["runs"][0]["status"], "running");
  // The orphaned model run does not outlive the engine.
  pid_t slow_pid = slow_run_pid(dir);
  EXPECT_TRUE(wait_until([&] { return process_gone(slow_pid); }, 5));

  Finished resumed = run_diagnose({"wf.yaml", "--resume", run_dir}, dir.path(), {{"SLOW_SECONDS", "0"}});
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  std::string log = read_text(dir / "times.log");
  EXPECT_EQ(count_lines(log, "quick start"), 1u) << log;
  EXPECT_EQ(count_lines(log, "slow start"), 2u) << log;
  EXPECT_EQ(count_lines(log, "slow end"), 1u) << log;
  EXPECT_NE(resumed.err.find("quick: pass (kept from the interrupted invocation)"), std::string::npos) << resumed.err;
  EXPECT_EQ(read_json(run_dir + "/report.json")["complete"], true);
  EXPECT_EQ(only_run_dir(dir / "runs"), run_dir);  // no new run directory
}

TEST(EndToEnd, CtrlCStopsTheChildrenAndLeavesAResumableState) {
  TempDir dir;
  write_text(dir / "wf.yaml", resumable_workflow());
  DiagnoseProcess engine({"wf.yaml"}, dir.path(), {{"SLOW_SECONDS", "60"}});
  ASSERT_TRUE(signal_once_slow_run_started(engine, dir, SIGINT));
  ASSERT_EQ(engine.wait(), 130) << engine.err();
  EXPECT_NE(engine.err().find("interrupted; continue with: diagnose <workflow.yaml> --resume"), std::string::npos);
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json state = read_json(run_dir + "/state.json");
  EXPECT_EQ(state["interrupted"], true);
  EXPECT_EQ(state["steps"][1]["runs"][0]["status"], "interrupted");
  EXPECT_TRUE(process_gone(slow_run_pid(dir)));

  Finished resumed = run_diagnose({"run", "wf.yaml", "--resume", run_dir}, dir.path(), {{"SLOW_SECONDS", "0"}});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(count_lines(read_text(dir / "times.log"), "quick start"), 1u);
}

TEST(EndToEnd, SecondCtrlCKillsAChildThatIgnoresTheFirst) {
  TempDir dir;
  write_text(dir / "wf.yaml", hanging_workflow("", "60"));
  DiagnoseProcess engine({"wf.yaml"}, dir.path());
  ASSERT_TRUE(wait_until([&] { return !read_text(dir / "pids").empty(); }, 10));
  ::kill(engine.pid(), SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(process_gone(engine.pid()));  // still waiting for the child, which ignores SIGTERM
  auto start = std::chrono::steady_clock::now();
  ::kill(engine.pid(), SIGINT);
  EXPECT_EQ(engine.wait(), 130);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  std::istringstream pids(read_text(dir / "pids"));
  pid_t shell = 0, child = 0;
  pids >> shell >> child;
  EXPECT_TRUE(wait_until([&] { return process_gone(shell) && process_gone(child); }, 2));
}

TEST(EndToEnd, CompareStepRunsBothSidesInParallel) {
  TempDir dir;
  write_text(dir / "wf.yaml", stand_in_model_yaml() + R"yaml(
defaults:
  slots: 2
steps:
  - id: paired
    kind: compare
    golden: {args: [--mode, golden, --sleep, "2", --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]}
    target: {args: [--mode, target, --sleep, "2", --log, "${workflow_dir}/times.log", --dump, "${run.dir}/elsewhere", --perturb, softmax],
             dump: "${run.dir}/elsewhere"}
    diagnoses: dynamo_meta_defect
)yaml");
  Finished r = run_diagnose({"wf.yaml", "-q"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  auto times = intervals(dir / "times.log");
  EXPECT_LT(times["golden"].start, times["target"].end);
  EXPECT_LT(times["target"].start, times["golden"].end);
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json report = read_json(run_dir + "/report.json");
  EXPECT_EQ(report["verdict"]["category"], "dynamo_meta_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "03_softmax");
  EXPECT_EQ(report["steps"][0]["runs"].size(), 2u);
  EXPECT_TRUE(fs::exists(run_dir + "/steps/paired/target/elsewhere/03_softmax.npy"));
  EXPECT_TRUE(fs::exists(run_dir + "/steps/paired/compare/result.json"));
  // The verdict reproduces the model runs and the comparison.
  ASSERT_EQ(report["verdict"]["reproduce"].size(), 3u);
  EXPECT_NE(report["verdict"]["reproduce"][1].get<std::string>().find("--perturb softmax"), std::string::npos);
}

TEST(EndToEnd, ResumeRerunsAStepWhoseDefinitionChanged) {
  TempDir dir;
  std::string first = stand_in_model_yaml() + R"yaml(
steps:
  - id: kept
    kind: run
    args: [--mode, kept, --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]
  - id: tweaked
    kind: run
    args: [--mode, tweaked, --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}"]
  - id: edited
    kind: run
    args: [--mode, edited, --log, "${workflow_dir}/times.log", --dump, "${run.dump_dir}", --fail-with-exception]
)yaml";
  write_text(dir / "wf.yaml", first);
  ASSERT_EQ(run_diagnose({"wf.yaml"}, dir.path()).code, 3);
  std::string run_dir = only_run_dir(dir / "runs");
  std::string fixed = first;
  fixed.replace(fixed.find(", --fail-with-exception"), 23, "");
  fixed.replace(fixed.find("--mode, tweaked,"), 16, "--mode, tweaked, --sleep, \"0\",");
  write_text(dir / "wf.yaml", fixed);
  Finished r = run_diagnose({"wf.yaml", "--resume", run_dir}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string log = read_text(dir / "times.log");
  EXPECT_EQ(count_lines(log, "kept start"), 1u) << log;
  EXPECT_EQ(count_lines(log, "edited start"), 2u) << log;
  EXPECT_EQ(count_lines(log, "tweaked start"), 2u) << log;  // it had passed, but its definition changed
  EXPECT_EQ(read_text(run_dir + "/workflow.yaml"), fixed);
}

TEST(EndToEnd, ReportCommandRendersTheReportsAgain) {
  TempDir dir;
  write_text(dir / "wf.yaml", eager_graph_compare("--perturb, softmax"));
  ASSERT_EQ(run_diagnose({"wf.yaml", "-q"}, dir.path()).code, 1);
  std::string run_dir = only_run_dir(dir / "runs");
  std::string original = read_text(run_dir + "/report.json");
  fs::remove(run_dir + "/report.json");
  fs::remove(run_dir + "/junit.xml");
  Finished r = run_diagnose({"report", run_dir}, dir.path());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(read_text(run_dir + "/report.json"), original);
  EXPECT_TRUE(fs::exists(run_dir + "/junit.xml"));
  EXPECT_NE(r.out.find("03_softmax"), std::string::npos);
  EXPECT_EQ(run_diagnose({"report", dir / "nowhere"}, dir.path()).code, 2);
}

TEST(EndToEnd, JsonLogFormatPrintsOneEventPerLine) {
  TempDir dir;
  write_text(dir / "wf.yaml", eager_graph_compare("--perturb, relu"));
  Finished r = run_diagnose({"wf.yaml", "--log-format", "json"}, dir.path());
  ASSERT_EQ(r.code, 1);
  std::istringstream lines(r.out);
  std::vector<std::string> events;
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json event = nlohmann::json::parse(line);  // throws (fails the test) on anything else
    events.push_back(event["event"]);
  }
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "workflow_started");
  EXPECT_EQ(events.back(), "verdict");
  EXPECT_EQ(std::count(events.begin(), events.end(), "run_finished"), 2);
  EXPECT_EQ(std::count(events.begin(), events.end(), "step_finished"), 4);
}

TEST(EndToEnd, VerboseTailsTheRunsOutputLive) {
  TempDir dir;
  write_text(dir / "wf.yaml",
             stand_in_model_yaml() + "steps:\n  - {id: one, kind: run, args: [--dump, \"${run.dump_dir}\"]}\n");
  Finished r = run_diagnose({"wf.yaml", "--verbose"}, dir.path());
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.err.find("one/main | model: done"), std::string::npos) << r.err;
}

TEST(EndToEnd, RetriesRestartACrashedRun) {
  TempDir dir;
  write_text(dir / "wf.yaml", R"yaml(
model:
  shell: 'if [ -e attempted ]; then echo second; else touch attempted; exit 9; fi'
  retries: 2
steps:
  - {id: flaky, kind: run}
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json run = read_json(only_run_dir(dir / "runs") + "/report.json")["steps"][0]["runs"][0];
  EXPECT_EQ(run["attempts"], 2);
  EXPECT_EQ(run["argv"][0], "/bin/sh");
}

TEST(EndToEnd, CheckExitCodeAndMissingOutputs) {
  TempDir dir;
  write_text(dir / "wf.yaml", R"yaml(
model:
  argv: [sh, -c, 'exit 1']
steps:
  - id: check
    kind: run
    fail_exit_code: 1
    diagnoses: eager_device_defect
    on_failure: continue
  - id: produces
    kind: run
    argv: ["true"]
    outputs: [missing.bin]
)yaml");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;  // a diagnosed defect outranks the later error
  nlohmann::json report = read_json(only_run_dir(dir / "runs") + "/report.json");
  EXPECT_EQ(report["verdict"]["category"], "eager_device_defect");
  EXPECT_EQ(report["steps"][0]["status"], "fail");
  EXPECT_EQ(report["steps"][1]["status"], "error");
  EXPECT_EQ(report["steps"][1]["runs"][0]["status"], "missing_outputs");
  EXPECT_EQ(report["verdict"]["errored_steps"], nlohmann::json::array({"produces"}));
}

TEST(EndToEnd, ProgramNotFoundIsReportedNotCrashed) {
  TempDir dir;
  write_text(dir / "wf.yaml", "model: {argv: [no-such-program-xyz]}\nsteps:\n  - {id: a, kind: run}\n");
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  EXPECT_EQ(r.code, 3);
  nlohmann::json run = read_json(only_run_dir(dir / "runs") + "/report.json")["steps"][0]["runs"][0];
  EXPECT_EQ(run["status"], "not_started");
  EXPECT_EQ(run["error"], "program 'no-such-program-xyz' not found on PATH");
}

TEST(EndToEnd, UsageErrorsExitTwo) {
  TempDir dir;
  write_text(dir / "bad.yaml", "model: {argv: [python]}\nsteps:\n  - {id: a, kind: rnu}\n");
  Finished r = run_diagnose({"bad.yaml"}, dir.path());
  EXPECT_EQ(r.code, 2);
  // Every registered kind is listed, the generic ones first.
  EXPECT_EQ(r.err.rfind("bad.yaml:3:19: error: steps.a: unknown step kind 'rnu' (did you mean 'run'?); known kinds: "
                        "run, compare, assert, ",
                        0),
            0u)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "runs"));
  EXPECT_EQ(run_diagnose({"validate", "bad.yaml"}, dir.path()).code, 2);
  EXPECT_EQ(run_diagnose({"missing.yaml"}, dir.path()).code, 2);
  EXPECT_EQ(run_diagnose({"--bogus"}, dir.path()).code, 2);
  write_text(dir / "ok.yaml", "model: {argv: [\"true\"]}\nsteps:\n  - {id: a, kind: run}\n");
  EXPECT_EQ(run_diagnose({"ok.yaml", "--resume", dir / "not-a-run"}, dir.path()).code, 2);
  EXPECT_EQ(run_diagnose({"ok.yaml", "--log-format", "xml"}, dir.path()).code, 2);
  Finished valid = run_diagnose({"validate", "ok.yaml"}, dir.path());
  EXPECT_EQ(valid.code, 0);
  EXPECT_EQ(valid.out, "ok.yaml: ok (1 steps)\n");
}

}  // namespace
}  // namespace diagnose
