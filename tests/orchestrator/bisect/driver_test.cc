// bisect/driver.h's trial log: the knob's fields kept beside the trials, and the older logs it
// still reads.
#include <gtest/gtest.h>

#include "orchestrator/bisect/driver.h"
#include "tests/support/files.h"

namespace diagnose::bisect {
namespace {

using testing_support::TempDir;
using testing_support::write_text;

TEST(TrialLog, KeepsTheKnobsFields) {
  TempDir dir;
  TrialLog log;
  log.fingerprint = {{"command", {"model"}}};
  log.candidates = {"GraphRule", "UbRule", "GivenRule"};
  log.knob_state = {{"graph_fusion_rules", {"GraphRule"}}, {"ub_fusion_rules", {"UbRule"}}};
  TrialRecord trial;
  trial.off = {"GivenRule"};
  trial.outcome = Outcome::Fail;
  log.trials = {trial};
  write_trial_log(trial_log_path(dir.path()), log);

  std::optional<TrialLog> read = read_trial_log(trial_log_path(dir.path()));
  ASSERT_TRUE(read);
  EXPECT_EQ(read->fingerprint, log.fingerprint);
  EXPECT_EQ(read->candidates, log.candidates);
  EXPECT_EQ(read->knob_state, log.knob_state);
  ASSERT_EQ(read->trials.size(), 1u);
  EXPECT_EQ(read->trials[0].off, trial.off);
}

TEST(TrialLog, ReadsTheOlderForms) {
  TempDir dir;
  // The fusion_bisect step's: every rule not in ub_fusion_rules was a graph rule.
  write_text(dir / "step.json", R"({"fingerprint": "abc", "candidates": ["A", "B"], "ub_fusion_rules": ["B"],
                                   "trials": []})");
  std::optional<TrialLog> step = read_trial_log(dir / "step.json");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->fingerprint, "abc");
  EXPECT_EQ(step->knob_state, (nlohmann::json{{"ub_fusion_rules", {"B"}}}));
  // diagnose bisect's: the identity under "bisection", the candidates inside it.
  write_text(dir / "command.json", R"({"bisection": {"command": ["m"], "candidates": ["A"], "golden": ""},
                                      "trials": [{"off": [], "outcome": "fail", "phase": "sanity", "round": 1}]})");
  std::optional<TrialLog> command = read_trial_log(dir / "command.json");
  ASSERT_TRUE(command);
  EXPECT_EQ(command->fingerprint, (nlohmann::json{{"command", {"m"}}, {"golden", ""}}));
  EXPECT_EQ(command->candidates, std::vector<std::string>{"A"});
  EXPECT_TRUE(command->knob_state.is_null());
  EXPECT_EQ(command->trials.size(), 1u);

  EXPECT_FALSE(read_trial_log(dir / "absent.json"));
  write_text(dir / "bad.json", "{\"trials\": 3}");
  EXPECT_THROW(read_trial_log(dir / "bad.json"), std::runtime_error);
}

}  // namespace
}  // namespace diagnose::bisect
