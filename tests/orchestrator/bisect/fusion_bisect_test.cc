// The bisection engine over real processes: `diagnose bisect` and the fusion_bisect step,
// with scripts/fusion_standin.py as the model (named rules, a switch file, fusion_result.json,
// planted wrong / pair / crash / sticky rules). Each trial is a real process.
#include <gtest/gtest.h>

#include <set>

#include "orchestrator/bisect/trial_oracle.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

std::vector<std::string> standin(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {"--", python(), script("fusion_standin.py"), "--switch-file", "${switch_file}"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::vector<std::string> bisect_args(const std::string& out, const std::vector<std::string>& options,
                                     const std::vector<std::string>& command) {
  std::vector<std::string> args = {"bisect", "-o", out, "--slots", "2", "--confirmations", "1"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// Runs the stand-in once with `switch_file`; its exit status.
int standin_exit(const TempDir& dir, const std::string& switch_file, const std::string& faults) {
  std::string command = python() + " " + script("fusion_standin.py") + " --switch-file " + switch_file + " --faults " +
                        faults + " > /dev/null 2>&1";
  int status = std::system(("cd " + dir.path() + " && " + command).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `diagnose bisect` found TbeEltwiseFusionPass alone and its workaround switches the rule off in
// the UBFusion section (a UB fusion rule): the bisection's result.
nlohmann::json expect_tbe_eltwise_found(const TempDir& dir, const Finished& r) {
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json result = read_json(dir / "out/bisection.json");
  EXPECT_EQ(result["culprits_off"], nlohmann::json({"TbeEltwiseFusionPass"}));
  nlohmann::json workaround = read_json(dir / "out/fusion_switch.json")["Switch"];
  EXPECT_EQ(workaround["UBFusion"]["TbeEltwiseFusionPass"], "off") << workaround.dump();
  return result;
}

TEST(TrialOracle, NamesAreStablePerConfigurationAndOccurrence) {
  EXPECT_EQ(bisect::trial_name({"A", "B"}, 0), bisect::trial_name({"A", "B"}, 0));
  EXPECT_NE(bisect::trial_name({"A", "B"}, 0), bisect::trial_name({"A", "B"}, 1));
  EXPECT_NE(bisect::trial_name({"AB"}, 0), bisect::trial_name({"A", "B"}, 0));
  EXPECT_EQ(bisect::trial_name({}, 2).substr(9), "-2");
}

// A repeat exists to show run-to-run differences: with runner.warm it must not be a fork of the
// warm process that forked the first run (their hash seed would be one).
TEST(TrialOracle, RepeatsOfAConfigurationStartAsProcessesOfTheirOwn) {
  TempDir dir;
  bisect::TrialSetup setup;
  setup.dir_of = [&](const std::string& name) { return dir / name; };
  std::vector<int> occurrences;
  setup.make_request = [&](const bisect::Trial& trial) {
    occurrences.push_back(trial.occurrence);
    RunRequest request;
    request.name = trial.name;
    return request;
  };
  std::vector<RunRequest> executed;
  setup.execute = [&](const std::vector<RunRequest>& requests) {
    executed.insert(executed.end(), requests.begin(), requests.end());
    std::vector<RunRecord> records(requests.size());
    for (RunRecord& record : records) record.status = RunStatus::Failed;
    return records;
  };
  bisect::TrialOracle oracle(setup, {});
  oracle.run_batch({{}, {"A"}, {}});
  oracle.run_batch({{"A"}});
  ASSERT_EQ(executed.size(), 4u);
  EXPECT_EQ(executed[0].never_forked, "");
  EXPECT_EQ(executed[1].never_forked, "");
  EXPECT_EQ(executed[2].never_forked, kRepeatNeverForked);
  EXPECT_EQ(executed[3].never_forked, kRepeatNeverForked);
  EXPECT_EQ(occurrences, (std::vector<int>{0, 0, 1, 1}));
}

TEST(TrialOracle, RulesSelectedByGlobs) {
  std::vector<std::string> rules = {"GeluFusionPass", "SoftmaxFusionPass", "TbeEltwiseFusionPass"};
  EXPECT_EQ(bisect::select_rules(rules, {}, {"Tbe*"}),
            (std::vector<std::string>{"GeluFusionPass", "SoftmaxFusionPass"}));
  EXPECT_EQ(bisect::select_rules(rules, {"*max*", "Gelu*"}, {}),
            (std::vector<std::string>{"GeluFusionPass", "SoftmaxFusionPass"}));
}

TEST(BisectCommand, FindsTheWrongRuleAndItsSwitchFileFixesTheCommand) {
  TempDir dir;
  Finished r = run_diagnose(bisect_args("out", {}, standin({"--faults", "wrong:SoftmaxFusionPass"})), dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json result = read_json(dir / "out/bisection.json");
  EXPECT_EQ(result["conclusion"], "culprits_found");
  EXPECT_EQ(result["culprits_off"], nlohmann::json({"SoftmaxFusionPass"}));
  EXPECT_EQ(result["candidates"].size(), 8u);  // every rule that fired in the all-on run
  EXPECT_EQ(result["verified"], true);
  EXPECT_LE(result["trials"].size(), 12u);
  EXPECT_NE(r.out.find("last passing: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first failing: "), std::string::npos) << r.out;
  // The switch file turns exactly the culprit off, and the model passes with it.
  std::string switch_file = dir / "out/fusion_switch.json";
  nlohmann::json file = read_json(switch_file);
  EXPECT_EQ(file["Switch"]["GraphFusion"].size(), 1u) << file.dump();
  EXPECT_EQ(file["Switch"]["GraphFusion"]["SoftmaxFusionPass"], "off");
  EXPECT_EQ(standin_exit(dir, switch_file, "wrong:SoftmaxFusionPass"), 0);
  EXPECT_EQ(standin_exit(dir, dir / "out/trials/" + bisect::trial_name({}, 0) + "/fusion_switch.json",
                         "wrong:SoftmaxFusionPass"),
            1);
}

TEST(BisectCommand, FindsAPairThatIsWrongOnlyTogether) {
  TempDir dir;
  Finished r = run_diagnose(bisect_args("out", {"--switch-env", "STANDIN_SWITCH_FILE"},
                                        {"--", python(), script("fusion_standin.py"), "--faults",
                                         "pair:LayerNormFusionPass+PadConv2dFusionPass"}),
                            dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json result = read_json(dir / "out/bisection.json");
  ASSERT_EQ(result["culprit_sets"].size(), 1u) << result.dump(1);
  EXPECT_EQ(result["culprit_sets"][0]["rules"], nlohmann::json({"LayerNormFusionPass", "PadConv2dFusionPass"}));
  EXPECT_EQ(result["verified"], true);
  EXPECT_EQ(standin_exit(dir, dir / "out/fusion_switch.json", "pair:LayerNormFusionPass+PadConv2dFusionPass"), 0);
}

TEST(BisectCommand, CrashingRuleIsFoundWhenCrashesCountAsFailures) {
  TempDir dir;
  Finished r = run_diagnose(bisect_args("out",
                                        {"--crash-is-failure", "--rules", "GeluFusionPass,SoftmaxFusionPass", "--rules",
                                         "TbeEltwiseFusionPass,PadConv2dFusionPass"},
                                        standin({"--faults", "crash:TbeEltwiseFusionPass"})),
                            dir.path());
  nlohmann::json result = expect_tbe_eltwise_found(dir, r);
  // Its section was never reported (it crashes before the report): off in GraphFusion too.
  EXPECT_EQ(read_json(dir / "out/fusion_switch.json")["Switch"]["GraphFusion"]["TbeEltwiseFusionPass"], "off");
  bool crash_seen = false;
  for (const auto& row : result["trial_table"])
    if (row["outcome"] == "crash")
      crash_seen |= row["detail"].get<std::string>().find("crashed the compiler") != std::string::npos;
  EXPECT_TRUE(crash_seen) << result["trial_table"].dump(1);
}

TEST(BisectCommand, ARuleThatDoesNotSwitchOffMakesItsTrialsInvalid) {
  TempDir dir;
  Finished r = run_diagnose(bisect_args("out", {}, standin({"--faults", "wrong:GeluFusionPass,sticky:GeluFusionPass"})),
                            dir.path());
  nlohmann::json result = read_json(dir / "out/bisection.json");
  EXPECT_EQ(r.code, 0) << r.out << r.err;  // not a fusion problem among the rules that can be switched off
  EXPECT_EQ(result["conclusion"], "not_fusion");
  EXPECT_EQ(result["unswitchable"], nlohmann::json({"GeluFusionPass"}));
  EXPECT_NE(result["summary"].get<std::string>().find("GeluFusionPass could not be switched off"), std::string::npos);
  int invalid = 0;
  for (const auto& trial : result["trials"]) invalid += trial["outcome"] == "invalid";
  EXPECT_GE(invalid, 1);
}

TEST(BisectCommand, JudgesByComparingDumpsWithAGolden) {
  TempDir dir;
  ASSERT_EQ(std::system(("cd " + dir.path() + " && " + python() + " " + script("fusion_standin.py") +
                         " --faults '' --dump golden > /dev/null")
                            .c_str()),
            0);
  Finished r =
      run_diagnose(bisect_args("out", {"--golden", "golden", "--candidates-from", dir / "fusion_result.json"},
                               standin({"--faults", "wrong:TbeEltwiseFusionPass", "--dump", "${trial_dir}/dump"})),
                   dir.path());
  nlohmann::json result = expect_tbe_eltwise_found(dir, r);
  // The UBFusion section alone.
  nlohmann::json workaround = read_json(dir / "out/fusion_switch.json")["Switch"];
  EXPECT_FALSE(workaround.contains("GraphFusion") && workaround["GraphFusion"].contains("TbeEltwiseFusionPass"));
  double worst = 0;
  for (const auto& row : result["trial_table"]) worst = std::max(worst, row.value("max_abs_error", 0.0));
  EXPECT_DOUBLE_EQ(worst, 0.5);
}

TEST(BisectCommand, KilledAndResumedRunsNoCompletedTrialAgain) {
  TempDir dir;
  std::vector<std::string> args = bisect_args(
      "out", {}, standin({"--faults", "wrong:PadConv2dFusionPass", "--sleep", "0.3", "--log", dir / "runs.log"}));
  std::set<std::string> logged_before;
  {
    DiagnoseProcess engine(args, dir.path());
    ASSERT_TRUE(wait_until(
        [&] {
          if (!fs::exists(dir / "out/trial_log.json")) return false;
          nlohmann::json log = nlohmann::json::parse(read_text(dir / "out/trial_log.json"), nullptr, false);
          return log.is_object() && log["trials"].size() >= 5;
        },
        60));
    ::kill(engine.pid(), SIGKILL);
    engine.wait();
  }
  nlohmann::json log = read_json(dir / "out/trial_log.json");
  std::map<std::vector<std::string>, int> seen;
  for (const auto& trial : log["trials"]) {
    std::vector<std::string> off = trial["off"];
    logged_before.insert(bisect::trial_name(off, seen[off]++));
  }
  size_t runs_before = lines_of(read_text(dir / "runs.log")).size();

  std::vector<std::string> resume = args;
  resume.insert(resume.begin() + 1, "--resume");
  Finished r = run_diagnose(resume, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json result = read_json(dir / "out/bisection.json");
  EXPECT_EQ(result["culprits_off"], nlohmann::json({"PadConv2dFusionPass"}));
  EXPECT_EQ(result["replayed_trials"].get<size_t>(), logged_before.size());
  std::vector<std::string> runs = lines_of(read_text(dir / "runs.log"));
  for (size_t i = runs_before; i < runs.size(); ++i)
    EXPECT_EQ(logged_before.count(runs[i]), 0u) << runs[i] << " ran again after the resume";
  EXPECT_EQ(runs.size() - runs_before, result["new_trials"].get<size_t>());
}

// The defaults but one slot (no --confirmations): an exit-code oracle whose all-on runs agree
// confirms each configuration with one run, so one culprit among 28 takes the floor of 9 trials
// (2 all-on runs, ceil(log2 28) = 5 search trials, 2 checks), said beside the count.
TEST(BisectCommand, ADeterministicCommandTakesTheFloorOfTrials) {
  TempDir dir;
  Finished r = run_diagnose({"bisect", "-o", "out", "--slots", "1", "--", python(), script("fusion_standin.py"),
                             "--switch-file", "${switch_file}", "--rule-count", "28", "--faults", "wrong:Rule17"},
                            dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json result = read_json(dir / "out/bisection.json");
  EXPECT_EQ(result["culprits_off"], nlohmann::json({"Rule17"}));
  EXPECT_EQ(result["confidence"], "high");
  EXPECT_LE(result["trials"].size(), 9u) << result["trial_table"].dump(1);
  EXPECT_NE(r.out.find("floor: 9 trials for one culprit among 28 rules"), std::string::npos) << r.out;
}

// A command whose all-on runs disagree (the second run's outcome reversed) gets majority votes:
// the culprit is still found, with low confidence, in more trials than the floor.
TEST(BisectCommand, AFlakyCommandGetsMajorityVotes) {
  TempDir dir;
  Finished r =
      run_diagnose({"bisect", "-o", "out", "--slots", "1", "--", python(), script("fusion_standin.py"), "--switch-file",
                    "${switch_file}", "--faults", "wrong:GeluFusionPass,flip:1", "--log", dir / "runs.log"},
                   dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json result = read_json(dir / "out/bisection.json");
  EXPECT_EQ(result["culprits_off"], nlohmann::json({"GeluFusionPass"}));
  EXPECT_EQ(result["nondeterministic"], true);
  EXPECT_EQ(result["confidence"], "low");
  EXPECT_NE(result["confidence_notes"].dump().find("majority vote"), std::string::npos) << result.dump(1);
  EXPECT_NE(r.out.find("majority votes: the command's outcomes varied"), std::string::npos) << r.out;
}

TEST(BisectCommand, BadInvocationsExitTwoWithAReason) {
  TempDir dir;
  Finished no_knob = run_diagnose({"bisect", "-o", "out", "--rules", "A", "--", python(), "-c", "pass"}, dir.path());
  EXPECT_EQ(no_knob.code, 2);
  EXPECT_NE(no_knob.err.find("${switch_file}"), std::string::npos) << no_knob.err;
  Finished unknown = run_diagnose({"bisect", "-o", "out", "--rules", "A", "--", "true", "${switch}"}, dir.path());
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown reference '${switch}'"), std::string::npos) << unknown.err;
  write_text(dir / "out/trial_log.json", "{}");
  Finished exists = run_diagnose({"bisect", "-o", "out", "--rules", "A", "--", "true", "${switch_file}"}, dir.path());
  EXPECT_EQ(exists.code, 2);
  EXPECT_NE(exists.err.find("--resume"), std::string::npos) << exists.err;
  Finished no_report = run_diagnose({"bisect", "-o", "fresh", "--", "true", "${switch_file}"}, dir.path());
  EXPECT_EQ(no_report.code, 3);
  EXPECT_NE(no_report.err.find("left no fired-rule report"), std::string::npos) << no_report.err;
}

// The workflow step on a command model: golden run, trials compared with it, verdict.
std::string step_workflow(const std::string& faults, const std::string& extra = "") {
  return "name: bisect\nmodel:\n  argv: [" + python() + ", " + script("fusion_standin.py") +
         ", --switch-file, \"${switch_file}\", --dump, \"${run.dump_dir}\", --log, \"${workflow_dir}/runs.log\"]\n"
         "defaults:\n  slots: 2\nsteps:\n  - id: fusion\n    kind: fusion_bisect\n    confirmations: 1\n"
         "    golden: {argv: [" +
         python() + ", " + script("fusion_standin.py") +
         ", --faults, \"\", --dump, \"${run.dump_dir}\"]}\n"
         "    target: {args: [--faults, \"" +
         faults + "\"]}\n" + extra;
}

TEST(FusionBisectStep, VerdictNamesTheCulpritWithWorkaroundTableAndReplays) {
  TempDir dir;
  write_text(dir / "wf.yaml", step_workflow("wrong:GeluFusionPass", "    exclude: [\"Tbe*\"]\n"));
  Finished v = run_diagnose({"validate", "wf.yaml"}, dir.path());
  ASSERT_EQ(v.code, 0) << v.out << v.err;
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json report = read_json(run_dir + "/report.json");
  const nlohmann::json& verdict = report["verdict"];
  EXPECT_EQ(verdict["category"], "fusion_defect");
  EXPECT_EQ(verdict["culprit"], "GeluFusionPass");
  bool table = false, workaround = false;
  for (const auto& e : verdict["evidence"]) {
    if (e["name"] == "bisection trials") {
      table = true;
      EXPECT_TRUE(e["value"][0].contains("max_abs_error")) << e.dump();
      for (const auto& row : e["value"]) EXPECT_EQ(row["rules_off"].get<std::string>().find("Tbe"), std::string::npos);
    }
    if (e["name"].get<std::string>().rfind("workaround", 0) == 0 && e.contains("path")) {
      workaround = true;
      EXPECT_EQ(read_json(e["path"])["Switch"]["GraphFusion"]["GeluFusionPass"], "off");
    }
  }
  EXPECT_TRUE(table && workaround) << verdict.dump(1);
  std::string reproduce = verdict["reproduce"].dump();
  EXPECT_NE(reproduce.find("last passing configuration"), std::string::npos) << reproduce;
  EXPECT_NE(reproduce.find("fusion_switch.json"), std::string::npos) << reproduce;
  EXPECT_TRUE(fs::exists(run_dir + "/steps/fusion/bisection.json"));
}

// Runs step_workflow(faults, step_keys), which must exit 0; returns its step's record.
nlohmann::json step_of_passing_run(const TempDir& dir, const std::string& faults, const std::string& step_keys) {
  write_text(dir / "wf.yaml", step_workflow(faults, step_keys));
  Finished r = run_diagnose({"wf.yaml"}, dir.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return read_json(only_run_dir(dir / "runs") + "/state.json")["steps"][0];
}

TEST(FusionBisectStep, NoFusionDependenceIsAPassSayingSo) {
  TempDir dir;
  nlohmann::json step = step_of_passing_run(dir, "", "    candidates: [GeluFusionPass, SoftmaxFusionPass]\n");
  EXPECT_EQ(step["status"], "pass");
  EXPECT_EQ(step["metrics"]["conclusion"], "no_failure");
}

// A backend with no fusion rules writes no report: the failure cannot be a rule's, and the
// flowchart's verdict comes from the other steps.
TEST(FusionBisectStep, NoRuleFiredIsNotAFusionProblem) {
  TempDir dir;
  nlohmann::json step = step_of_passing_run(dir, "wrong:GeluFusionPass", "    fired_report: never_written.json\n");
  EXPECT_EQ(step["status"], "pass");
  EXPECT_EQ(step["metrics"]["conclusion"], "not_fusion");
  EXPECT_NE(step["summary"].get<std::string>().find("no fired-rule report at never_written.json"), std::string::npos)
      << step.dump(1);
}

TEST(FusionBisectStep, CtrlCThenResumeReplaysTheFinishedTrials) {
  TempDir dir;
  write_text(dir / "wf.yaml", step_workflow("wrong:SoftmaxFusionPass", "    baseline_repeats: 0\n"));
  std::string log_path;
  {
    DiagnoseProcess engine({"wf.yaml"}, dir.path());
    ASSERT_TRUE(wait_until([&] { return lines_of(read_text(dir / "runs.log")).size() >= 5; }, 60));
    ::kill(engine.pid(), SIGINT);
    ASSERT_EQ(engine.wait(), 130) << engine.err();
  }
  std::string run_dir = only_run_dir(dir / "runs");
  nlohmann::json log = read_json(run_dir + "/steps/fusion/trial_log.json");
  size_t logged = log["trials"].size();
  ASSERT_GE(logged, 3u);
  std::set<std::string> done;
  std::map<std::vector<std::string>, int> seen;
  for (const auto& trial : log["trials"]) {
    std::vector<std::string> off = trial["off"];
    done.insert(bisect::trial_name(off, seen[off]++));
  }
  size_t runs_before = lines_of(read_text(dir / "runs.log")).size();

  Finished r = run_diagnose({"wf.yaml", "--resume", run_dir}, dir.path());
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  nlohmann::json state = read_json(run_dir + "/state.json");
  EXPECT_EQ(state["steps"][0]["metrics"]["culprit"], "SoftmaxFusionPass");
  EXPECT_EQ(state["steps"][0]["metrics"]["replayed_trials"].get<size_t>(), logged);
  std::vector<std::string> runs = lines_of(read_text(dir / "runs.log"));
  for (size_t i = runs_before; i < runs.size(); ++i)
    EXPECT_EQ(done.count(runs[i]), 0u) << runs[i] << " ran again after the resume";
}

}  // namespace
}  // namespace diagnose
