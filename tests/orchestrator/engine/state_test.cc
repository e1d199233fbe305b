#include "orchestrator/engine/state.h"

#include <gtest/gtest.h>

#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

TEST(State, RoundTripsThroughItsFile) {
  TempDir dir;
  State state;
  state.workflow_name = "w";
  state.started = 100.5;
  StepResult step;
  step.id = "cmp";
  step.kind = "compare";
  step.status = StepStatus::Fail;
  step.summary = "3 failed";
  step.findings = {{"first failing op: add", "add"}};
  step.evidence = {{"table", "worst rows", "", nlohmann::json::array({{{"op", "add"}}})}};
  step.metrics = {{"failed", 3}};
  RunRecord run;
  run.name = "golden";
  run.status = RunStatus::Crashed;
  run.signal = 11;
  run.argv = {"python", "m.py"};
  run.env = {{"A", "1"}};
  step.runs = {run};
  state.steps = {step};
  save_state(state, dir / "state.json");
  EXPECT_FALSE(fs::exists(dir / "state.json.tmp"));
  State loaded = load_state(dir / "state.json");
  EXPECT_EQ(to_json(loaded), to_json(state));
  EXPECT_EQ(loaded.steps[0].runs[0].signal, 11);
  EXPECT_FALSE(loaded.steps[0].runs[0].exit_code);
}

TEST(State, RejectsWhatItCannotRead) {
  TempDir dir;
  EXPECT_THROW(load_state(dir / "missing.json"), std::runtime_error);
  write_text(dir / "garbage.json", "{not json");
  EXPECT_THROW(load_state(dir / "garbage.json"), std::runtime_error);
  write_text(dir / "other.json", R"({"format": "something-else"})");
  EXPECT_THROW(load_state(dir / "other.json"), std::runtime_error);
  write_text(dir / "future.json", R"({"format": "diagnose-state", "version": 99})");
  try {
    load_state(dir / "future.json");
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "state file version 99 is newer than this diagnose understands (1)");
  }
  write_text(dir / "wrong-types.json", R"({"format": "diagnose-state", "version": 1, "steps": [{"id": 5}]})");
  EXPECT_THROW(load_state(dir / "wrong-types.json"), std::runtime_error);
}

TEST(State, AtomicWriteReplacesWholeFiles) {
  TempDir dir;
  write_file_atomically(dir / "f", std::string(100000, 'a'));
  write_file_atomically(dir / "f", "short");
  EXPECT_EQ(read_text(dir / "f"), "short");
  EXPECT_THROW(write_file_atomically(dir / "no/such/dir/f", "x"), std::runtime_error);
}

}  // namespace
}  // namespace diagnose
