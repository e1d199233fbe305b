#include "orchestrator/engine/compiled_nothing.h"

#include "runspec/plugin_status.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>

namespace diagnose {
namespace {

namespace bfs = boost::filesystem;

// A finished plugin run of `script` whose status.json holds `compile_calls` (absent: null).
RunRecord finished_plugin_run(const bfs::path& dir, const nlohmann::json& compile_calls,
                              RunStatus status = RunStatus::Succeeded) {
  bfs::create_directories(dir);
  nlohmann::json doc = {{"format", "diagnose-run-status"},
                        {"argv", {"/p/diagnose_pytorch/__main__.py", "run", "/w/s.py", "--n", "4"}}};
  if (!compile_calls.is_null()) doc["compile_calls"] = compile_calls;
  std::ofstream(plugin_status_path(dir.string())) << doc.dump();
  std::ofstream((dir / "stdout.log").string()) << "sum 6.0\ndone without compiling\n";
  RunRecord run;
  run.name = "eager";
  run.dir = dir.string();
  run.status = status;
  run.stdout_path = (dir / "stdout.log").string();
  run.stderr_path = (dir / "stderr.log").string();
  return run;
}

class CompiledNothing : public ::testing::Test {
 protected:
  bfs::path dir = bfs::temp_directory_path() / bfs::unique_path("compiled-nothing-%%%%%%%%");
  void TearDown() override { bfs::remove_all(dir); }
};

TEST_F(CompiledNothing, AScriptThatNeverCalledTorchCompileIsAnErrorWithItsLogTail) {
  const std::optional<StepResult> result = script_compiled_nothing({finished_plugin_run(dir, nlohmann::json::array())});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, StepStatus::Error);
  EXPECT_EQ(result->summary.rfind("the script ended without compiling anything: run 'eager' ran /w/s.py", 0), 0u)
      << result->summary;
  ASSERT_EQ(result->evidence.size(), 1u) << "stderr.log is absent: only stdout's tail";
  EXPECT_EQ(result->evidence[0].kind, "log");
  EXPECT_NE(result->evidence[0].value.get<std::string>().find("done without compiling"), std::string::npos);
}

TEST_F(CompiledNothing, ARunThatCompiledOrFailedOrDidNotRecordTheCallsIsNot) {
  EXPECT_FALSE(
      script_compiled_nothing({finished_plugin_run(dir / "a", {{{"target", "Model"}, {"requested", nullptr}}})}));
  EXPECT_FALSE(script_compiled_nothing({finished_plugin_run(dir / "b", nlohmann::json::array(), RunStatus::Failed)}));
  EXPECT_FALSE(script_compiled_nothing({finished_plugin_run(dir / "c", nullptr)}));
  EXPECT_FALSE(script_compiled_nothing({RunRecord{}}));
}

}  // namespace
}  // namespace diagnose
