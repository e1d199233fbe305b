// Each option's default is declared once, in its kind's schema: `diagnose schema` prints it,
// StepKindDeclaration::option reads it at load, and the bisection's match bisect::Options.
#include <gtest/gtest.h>

#include "orchestrator/bisect/bisector.h"
#include "orchestrator/engine/step_registry.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "steps/judgement/dump_judgement.h"

namespace diagnose {
namespace {

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
  std::string yaml =
      "model: {argv: [\"true\"]}\nsteps:\n  - {id: a, kind: compare, golden: g, target: t, worst_rows: 7}\n"
      "  - {id: b, kind: compare, golden: g, target: t}\n";
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(yaml, "wf.yaml", diagnostics);
  ASSERT_TRUE(workflow) << (diagnostics.empty() ? "" : format_diagnostic(diagnostics.list()[0]));
  const StepKind& compare = *find_step_kind("compare");
  EXPECT_EQ(compare.option<int>(workflow->steps[0], "worst_rows"), 7);
  EXPECT_EQ(compare.option<int>(workflow->steps[1], "worst_rows"), 5);
  EXPECT_THROW(compare.option<int>(workflow->steps[1], "rank"), std::logic_error);  // a key without a default
}

TEST(StepOptions, ComparisonSettingsAreResolvedAtLoad) {
  std::string yaml =
      "model: {argv: [\"true\"]}\ndefaults: {tolerances: {fp16: {rtol: 1e-2}}}\nsteps:\n"
      "  - {id: a, kind: compare, golden: g, target: t, preset: fp32, rank: 1, worst_rows: 7,\n"
      "     tolerances: {fp16: {atol: 1e-3}}}\n";
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(yaml, "wf.yaml", diagnostics);
  ASSERT_TRUE(workflow) << (diagnostics.empty() ? "" : format_diagnostic(diagnostics.list()[0]));
  const auto* options = dynamic_cast<const ComparingOptions*>(workflow->steps[0].options.get());
  ASSERT_NE(options, nullptr);
  const ComparisonSettings& settings = options->comparison;
  EXPECT_EQ(settings.tolerances.presets.at("fp16").rtol, 1e-2);
  EXPECT_EQ(settings.tolerances.presets.at("fp16").atol, 1e-3);
  EXPECT_EQ(settings.tolerances.forced_preset, std::optional<std::string>("fp32"));
  EXPECT_EQ(settings.worst_rows, 7u);
  EXPECT_EQ(settings.compare_options(), " -r 1 --preset fp32 --tol fp16.rtol=1e-2 --tol fp16.atol=1e-3");
}

TEST(StepOptions, ABadToleranceStopsTheLoadWhereItIsWritten) {
  for (const char* kind : {"compare", "gate", "fusion_bisect"}) {
    const std::string side = std::string(kind) == "gate" ? "baseline: b" : "golden: g";
    std::string yaml = std::string("model: {script: m.py}\nsteps:\n  - id: a\n    kind: ") + kind + "\n    " + side +
                       "\n    tolerances: {fp16: {rtol: -1}}\n";
    Diagnostics diagnostics("wf.yaml");
    EXPECT_FALSE(load_workflow_text(yaml, "wf.yaml", diagnostics)) << kind;
    ASSERT_FALSE(diagnostics.empty()) << kind;
    EXPECT_EQ(diagnostics.list()[0].line, 6) << kind << ": " << format_diagnostic(diagnostics.list()[0]);
  }
}

TEST(StepOptions, EveryComparingKindChecksItsPresetAtLoad) {
  for (const char* kind : {"compare", "gate", "subgraph_isolate"}) {
    const std::string key = std::string(kind) == "compare" ? "golden: g, target: t, " : "";
    std::string yaml =
        std::string("model: {script: m.py}\nsteps:\n  - {id: a, kind: ") + kind + ", " + key + "preset: fp61}\n";
    Diagnostics diagnostics("wf.yaml");
    EXPECT_FALSE(load_workflow_text(yaml, "wf.yaml", diagnostics)) << kind;
    ASSERT_FALSE(diagnostics.empty()) << kind;
    EXPECT_NE(diagnostics.list()[0].message.find("unknown tolerance preset 'fp61' (did you mean 'fp64'?)"),
              std::string::npos)
        << kind << ": " << format_diagnostic(diagnostics.list()[0]);
  }
}

}  // namespace
}  // namespace diagnose
