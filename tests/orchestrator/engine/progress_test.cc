#include "orchestrator/engine/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "orchestrator/exec/subprocess.h"
#include "orchestrator/util/clock.h"

namespace diagnose {
namespace {

RunRecord finished_run(const std::string& name, double seconds) {
  RunRecord r;
  r.name = name;
  r.status = RunStatus::Succeeded;
  r.finished = now_seconds();
  r.started = r.finished - seconds;
  return r;
}

// What step 3 of 5, "bisect", prints over half a second of heartbeats (every 0.2 s) once its
// run t1 finished in `t1_seconds` and t2 started.
std::string heartbeats_after_one_run(size_t runs, double t1_seconds) {
  std::ostringstream out;
  {
    Progress progress(out, Verbosity::Normal, LogFormat::Human, 0.2);
    progress.step_started("bisect", 2, 5);
    progress.runs_scheduled("bisect", runs);
    progress.run_started("bisect", finished_run("t1", 0));
    progress.run_finished("bisect", finished_run("t1", t1_seconds));
    progress.run_started("bisect", finished_run("t2", 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return out.str();
}

TEST(Progress, LongStepsGetRunsDoneElapsedAndAnEstimate) {
  std::string text = heartbeats_after_one_run(4, 2.0);
  EXPECT_NE(text.find("[3/5] bisect\n  bisect: starting 4 runs\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  bisect/t1: succeeded in 2.0s  [1/4]"), std::string::npos) << text;
  EXPECT_NE(text.find("  bisect: 1/4 runs done, 1 running, 0."), std::string::npos) << text;
  // 2 runs x 2 s queued and 2 s less the running one's half second at most, one at a time.
  EXPECT_NE(text.find("elapsed, about 5."), std::string::npos) << text;
}

TEST(Progress, TheEstimateCountsDownBetweenRunsAndMovesWhenOneFinishes) {
  // Two runs of 2 s and 4 s done, two running for 1 s and 2.5 s, two queued: 3 s each.
  RunsSoFar runs{{2, 4}, {1, 2.5}, 2};
  std::optional<TimeLeft> left = estimate_time_left(runs);
  ASSERT_TRUE(left);
  EXPECT_DOUBLE_EQ(left->mean_run_seconds, 3);
  EXPECT_DOUBLE_EQ(left->seconds, (2 + 0.5 + 2 * 3) / 2.0);
  EXPECT_FALSE(left->overdue);
  runs.running_seconds = {3, 4.5};  // 2 s later
  left = estimate_time_left(runs);
  EXPECT_DOUBLE_EQ(left->seconds, 2 * 3 / 2.0);
  EXPECT_TRUE(left->overdue);
  runs.queued = 0;
  EXPECT_DOUBLE_EQ(estimate_time_left(runs)->seconds, 0);
  runs = {{2, 4, 9}, {1}, 0};  // a slow run finished: the mean moves
  EXPECT_DOUBLE_EQ(estimate_time_left(runs)->seconds, 4);
  EXPECT_FALSE(estimate_time_left({{}, {1}, 3}));  // nothing finished yet
  EXPECT_FALSE(estimate_time_left({{2}, {}, 0}));  // nothing left
}

TEST(Progress, OnATerminalTheHeartbeatIsOneLineRewrittenInPlace) {
  std::ostringstream out;
  {
    Progress progress(out, Verbosity::Normal, LogFormat::Human, 0.2);
    progress.live_status(40);
    progress.step_started("bisect", 2, 5);
    progress.runs_scheduled("bisect", 3);
    progress.run_started("bisect", finished_run("t1", 0));
    progress.run_finished("bisect", finished_run("t1", 2.0));
    progress.run_started("bisect", finished_run("t2", 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    progress.run_finished("bisect", finished_run("t2", 2.0));
  }
  const std::string text = out.str();
  const size_t live = text.find("\r  bisect: 1/3 runs done, 1 running");
  ASSERT_NE(live, std::string::npos) << text;
  const size_t end = text.find("\033[K", live);
  EXPECT_LE(end - live - 1, 39u) << text;  // within the width
  // The next line clears it first, and no heartbeat ends in a newline.
  EXPECT_NE(text.find("\r\033[K  bisect/t2: succeeded in 2.0s  [2/3]\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("elapsed\n"), std::string::npos) << text;
}

TEST(Progress, ASearchSaysWhichTrialOfAboutHowMany) {
  EXPECT_EQ(trial_text(5, 7), "trial 5 of about 7");
  EXPECT_EQ(trial_text(9, 9), "9 trials in all");
  std::ostringstream out;
  {
    Progress progress(out, Verbosity::Normal, LogFormat::Human, 0.2);
    progress.step_started("fusion", 6, 8);
    progress.runs_scheduled("fusion", 2);
    progress.search_progress("fusion", 3, 7);
    progress.search_progress("fusion", 3, 7);  // said once
    progress.search_progress("other", 1, 2);   // not the step running
    progress.run_started("fusion", finished_run("t1", 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    progress.search_progress("fusion", 8, 8);
  }
  const std::string text = out.str();
  EXPECT_EQ(text.find("  fusion: trial 3 of about 7 done\n"), text.rfind("  fusion: trial 3 of about 7 done\n"))
      << text;
  EXPECT_NE(text.find("  fusion: trial 3 of about 7 done\n"), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed, trial 3 of about 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  fusion: 8 trials in all\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("other"), std::string::npos) << text;
}

TEST(Progress, AnOverdueRunIsNamedNotCountedDown) {
  std::string text = heartbeats_after_one_run(2, 0.1);
  EXPECT_NE(text.find("elapsed, a run is past the finished runs' mean of 0.1s"), std::string::npos) << text;
}

TEST(Progress, QuietPrintsOnlyWhatMatters) {
  std::ostringstream out;
  {
    Progress progress(out, Verbosity::Quiet, LogFormat::Human, 60);
    progress.step_started("a", 0, 1);
    progress.runs_scheduled("a", 1);
    progress.run_output("a", "main", "noise", false);
    progress.run_finished("a", finished_run("main", 1));
    progress.warning("disk almost full");
  }
  EXPECT_EQ(out.str(), "warning: disk almost full\n");
}

TEST(Progress, JsonEventsAreOneObjectPerLine) {
  std::ostringstream out;
  {
    Progress progress(out, Verbosity::Normal, LogFormat::Json, 60);
    progress.workflow_started("w", "/runs/x", false, 2);
    progress.run_finished("a", finished_run("main", 1));
    progress.verdict("no_precision_problem", "fine", 0);
  }
  std::istringstream lines(out.str());
  std::vector<std::string> events;
  for (std::string line; std::getline(lines, line);) events.push_back(nlohmann::json::parse(line).at("event"));
  EXPECT_EQ(events, (std::vector<std::string>{"workflow_started", "run_finished", "verdict"}));
}

}  // namespace
}  // namespace diagnose
