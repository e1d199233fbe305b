// Each option's default is declared once, in its kind's schema: `diagnose schema` prints it,
// StepContext::option reads it, and the bisection's match bisect::Options.
#include <gtest/gtest.h>

#include "orchestrator/bisect/bisector.h"
#include "orchestrator/engine/step_registry.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

using testing_support::TempDir;

nlohmann::json step_property(const std::string& kind, const std::string& key) {
  nlohmann::json schema = workflow_json_schema();
  for (const nlohmann::json& alternative : schema["properties"]["steps"]["items"]["anyOf"])
    if (alternative["properties"]["kind"]["enum"][0] == kind) return alternative["properties"][key];
  ADD_FAILURE() << "no step kind " << kind << " in " << schema.dump().substr(0, 300);
  return nullptr;
}

TEST(StepOptions, SchemaPrintsTheBisectionDefaults) {
  bisect::Options defaults;
  EXPECT_EQ(step_property("fusion_bisect", "max_trials")["default"], defaults.max_trials);
  EXPECT_EQ(step_property("fusion_bisect", "confirmations")["default"], defaults.confirmations);
  EXPECT_EQ(step_property("fusion_bisect", "baseline_repeats")["default"], defaults.baseline_repeats);
  EXPECT_EQ(step_property("fusion_bisect", "crash_is_failure")["default"], defaults.crash_is_failure);
  EXPECT_NE(step_property("fusion_bisect", "max_trials")["description"].get<std::string>().find(
                "(default " + std::to_string(defaults.max_trials) + ")"),
            std::string::npos);
  EXPECT_EQ(step_property("compare", "worst_rows")["default"], 5);
}

TEST(StepOptions, SchemaPrintsTheWorkflowDefaults) {
  nlohmann::json schema = workflow_json_schema();
  const nlohmann::json& defaults = schema["properties"]["defaults"]["properties"];
  EXPECT_EQ(defaults["slots"]["default"], Defaults{}.slots);
  EXPECT_EQ(defaults["output_dir"]["default"], Defaults{}.output_dir);
  EXPECT_EQ(defaults["timeout"]["default"], Defaults{}.timeout_s);
  EXPECT_EQ(defaults["kill_grace"]["default"], Defaults{}.kill_grace_s);
  const nlohmann::json& model = schema["properties"]["model"]["properties"];
  EXPECT_EQ(model["backend"]["default"], ModelSpec{}.backend);
  EXPECT_EQ(model["device"]["default"], ModelSpec{}.device);
}

TEST(StepOptions, OptionIsTheKeyOrItsDeclaredDefault) {
  TempDir dir;
  std::string yaml =
      "model: {argv: [\"true\"]}\nsteps:\n  - {id: a, kind: compare, golden: g, target: t, worst_rows: 7}\n"
      "  - {id: b, kind: compare, golden: g, target: t}\n";
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(yaml, "wf.yaml", diagnostics);
  ASSERT_TRUE(workflow) << (diagnostics.empty() ? "" : format_diagnostic(diagnostics.list()[0]));
  State state;
  StepContext given(*workflow, workflow->steps[0], state, dir.path(), nullptr);
  StepContext absent(*workflow, workflow->steps[1], state, dir.path(), nullptr);
  EXPECT_EQ(given.option<int>("worst_rows"), 7);
  EXPECT_EQ(absent.option<int>("worst_rows"), 5);
  EXPECT_THROW(absent.option<int>("rank"), std::logic_error);  // a key without a default
}

}  // namespace
}  // namespace diagnose
