#include "orchestrator/engine/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "orchestrator/exec/subprocess.h"

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

TEST(Progress, LongStepsGetRunsDoneElapsedAndAnEstimate) {
  std::ostringstream out;
  {
    Progress progress(out, Verbosity::Normal, LogFormat::Human, 0.2);
    progress.step_started("bisect", 2, 5);
    progress.runs_scheduled("bisect", 4);
    progress.run_started("bisect", finished_run("t1", 0));
    progress.run_finished("bisect", finished_run("t1", 2.0));
    progress.run_started("bisect", finished_run("t2", 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::string text = out.str();
  EXPECT_NE(text.find("[3/5] bisect\n  bisect: starting 4 runs\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  bisect/t1: succeeded in 2.0s  [1/4]"), std::string::npos) << text;
  EXPECT_NE(text.find("  bisect: 1/4 runs done, 1 running, 0."), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed, about 6.0s left"), std::string::npos) << text;  // 3 runs x 2 s, one at a time
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
