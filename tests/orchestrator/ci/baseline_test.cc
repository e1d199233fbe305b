// The gate's baseline store: what a saved baseline holds, refusing to overwrite, parallel
// savers, and damaged baselines.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "orchestrator/ci/baseline.h"
#include "orchestrator/engine/state.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

// What the PyTorch plugin leaves in a run directory (status.json + outputs/).
void make_plugin_run(const std::string& dir, const std::string& tensor_bytes) {
  write_text(dir + "/status.json",
             R"({"format": "diagnose-run-status", "version": 1, "state": "ok", "torch_version": "2.13.0",
    "ran": {"mode": "compiled", "backend": "aot_eager", "device": "cpu", "dtype": null},
    "switches": {"active": {"inductor": {"max_autotune": false}}}})");
  write_text(dir + "/outputs/manifest.jsonl",
             "{\"type\": \"header\", \"format\": \"diagnose-dump\", \"version\": 1}\n");
  write_text(dir + "/outputs/tensors/0000000.output.0.npy", tensor_bytes);
  write_text(dir + "/dump/manifest.jsonl", "{\"type\": \"header\"}\n");
}

TEST(Baseline, SavesOutputsDumpAndMetadataAndLoadsThemVerified) {
  TempDir dir;
  make_plugin_run(dir / "run", "tensor-v1");
  Baseline saved = save_baseline({dir / "run", "", "1.0"}, dir / "baseline", false);
  EXPECT_EQ(saved.metadata["model_version"], "1.0");
  EXPECT_EQ(saved.metadata["torch_version"], "2.13.0");
  EXPECT_EQ(saved.metadata["backend"], "aot_eager");
  EXPECT_EQ(saved.metadata["switches"]["inductor"]["max_autotune"], false);
  EXPECT_TRUE(saved.metadata["machine"].contains("hostname"));
  Baseline loaded = load_baseline(dir / "baseline");
  EXPECT_TRUE(loaded.has_dump());
  EXPECT_EQ(read_text(loaded.outputs_dir() + "/tensors/0000000.output.0.npy"), "tensor-v1");
  EXPECT_EQ(loaded.metadata["files"].size(), 4u);  // outputs: 2, dump: 1, status.json
  // Nothing is left beside it.
  int entries = 0;
  for (fs::directory_iterator it(dir.path()), end; it != end; ++it) ++entries;
  EXPECT_EQ(entries, 2);
}

TEST(Baseline, RefusesToOverwriteUnlessForced) {
  TempDir dir;
  make_plugin_run(dir / "old", "old");
  make_plugin_run(dir / "new", "new");
  save_baseline({dir / "old", "", "1.0"}, dir / "baseline", false);
  try {
    save_baseline({dir / "new", "", "2.0"}, dir / "baseline", false);
    FAIL() << "overwrote a baseline silently";
  } catch (const std::runtime_error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("exists already"), std::string::npos) << message;
    EXPECT_NE(message.find("model version 1.0"), std::string::npos) << message;
    EXPECT_NE(message.find("--force"), std::string::npos) << message;
  }
  EXPECT_EQ(read_text(dir / "baseline/outputs/tensors/0000000.output.0.npy"), "old");
  save_baseline({dir / "new", "", "2.0"}, dir / "baseline", true);
  Baseline b = load_baseline(dir / "baseline");
  EXPECT_EQ(b.metadata["model_version"], "2.0");
  EXPECT_EQ(read_text(b.outputs_dir() + "/tensors/0000000.output.0.npy"), "new");
}

TEST(Baseline, TakesThePluginRunOutOfARunDirectory) {
  TempDir dir;
  std::string run_dir = dir / "runs/20261129-000000-ci";
  make_plugin_run(run_dir + "/steps/gate/target", "from-gate");
  State state;
  state.workflow_name = "ci";
  StepResult gate;
  gate.id = "gate";
  gate.kind = "gate";
  gate.metrics = {{"model_version", "3.1"}};
  RunRecord run;
  run.name = "target";
  run.status = RunStatus::Succeeded;
  run.dir = run_dir + "/steps/gate/target";
  gate.runs.push_back(run);
  state.steps.push_back(gate);
  save_state(state, run_dir + "/state.json");
  Baseline b = save_baseline({run_dir, "gate/target", ""}, dir / "baseline", false);
  EXPECT_EQ(b.metadata["model_version"], "3.1");
  EXPECT_EQ(read_text(b.outputs_dir() + "/tensors/0000000.output.0.npy"), "from-gate");
  EXPECT_THROW(save_baseline({run_dir, "gate/nothing", ""}, dir / "other", false), std::runtime_error);
  EXPECT_THROW(save_baseline({dir / "nowhere", "", ""}, dir / "other", false), std::runtime_error);
}

// CI jobs racing to record the same baseline: exactly one wins, the others are refused, and
// what is there afterwards is one whole baseline.
TEST(Baseline, ParallelSaversLeaveOneWholeBaseline) {
  TempDir dir;
  const int savers = 5;
  for (int i = 0; i < savers; ++i) make_plugin_run(dir / ("run" + std::to_string(i)), std::string(200000, 'a' + i));
  std::vector<pid_t> children;
  for (int i = 0; i < savers; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        save_baseline({dir / ("run" + std::to_string(i)), "", "v" + std::to_string(i)}, dir / "baseline", false);
        _exit(0);
      } catch (const std::exception& e) {
        _exit(std::string(e.what()).find("exists already") != std::string::npos ? 1 : 2);
      }
    }
    children.push_back(pid);
  }
  int won = 0, refused = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    won += WEXITSTATUS(status) == 0;
    refused += WEXITSTATUS(status) == 1;
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(refused, savers - 1);
  Baseline b = load_baseline(dir / "baseline");
  std::string version = b.metadata["model_version"];
  char letter = static_cast<char>('a' + (version[1] - '0'));
  EXPECT_EQ(read_text(b.outputs_dir() + "/tensors/0000000.output.0.npy"), std::string(200000, letter));
}

void expect_rejected(const std::string& dir, const std::string& words) {
  try {
    load_baseline(dir);
    FAIL() << "accepted a damaged baseline; expected: " << words;
  } catch (const std::runtime_error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("baseline " + fs::absolute(dir).lexically_normal().string()), std::string::npos) << message;
    EXPECT_NE(message.find(words), std::string::npos) << message;
  }
}

TEST(Baseline, DamagedBaselinesAreRejectedWithTheReason) {
  TempDir dir;
  make_plugin_run(dir / "run", "0123456789");
  expect_rejected(dir / "absent", "no such directory");
  expect_rejected(dir / "run", "not a baseline (no baseline.json)");

  save_baseline({dir / "run", "", "1"}, dir / "b", false);
  std::string tensor = dir / "b/outputs/tensors/0000000.output.0.npy";
  write_text(tensor, "0123456780");  // same size, other bytes
  expect_rejected(dir / "b", "outputs/tensors/0000000.output.0.npy has changed");
  write_text(tensor, "012");
  expect_rejected(dir / "b", "(3 bytes, recorded 10)");
  fs::remove(tensor);
  expect_rejected(dir / "b", "outputs/tensors/0000000.output.0.npy is missing");

  save_baseline({dir / "run", "", "1"}, dir / "c", false);
  write_text(dir / "c/baseline.json", "{\"format\": \"diagnose-baseline\", ");
  expect_rejected(dir / "c", "baseline.json is not valid JSON");
  write_text(dir / "c/baseline.json", "{\"format\": \"something-else\"}");
  expect_rejected(dir / "c", "not a diagnose baseline");
  write_text(dir / "c/baseline.json", "{\"format\": \"diagnose-baseline\", \"version\": 7, \"files\": {}}");
  expect_rejected(dir / "c", "version 7");
}

}  // namespace
}  // namespace diagnose
