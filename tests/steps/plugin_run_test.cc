// steps/plugin_runs/plugin_run.h: a `model: {script: ...}` workflow turned into plugin runs with their
// run specs; the model section's validation.
#include <gtest/gtest.h>

#include "orchestrator/engine/run_dir.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "steps/plugin_runs/plugin_run.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using testing_support::read_json;
using testing_support::source_dir;
using testing_support::TempDir;

std::vector<std::string> load_errors(const std::string& yaml) {
  Diagnostics diagnostics("wf.yaml");
  load_workflow_text(yaml, "wf.yaml", diagnostics);
  std::vector<std::string> messages;
  for (const Diagnostic& d : diagnostics.list()) messages.push_back(format_diagnostic(d));
  return messages;
}

Workflow load(const TempDir& dir, const std::string& yaml) {
  std::string path = dir / "wf.yaml";
  testing_support::write_text(path, yaml);
  Diagnostics diagnostics(path);
  std::optional<Workflow> workflow = load_workflow(path, diagnostics);
  for (const Diagnostic& d : diagnostics.list()) ADD_FAILURE() << format_diagnostic(d);
  return *workflow;
}

const char* kWorkflow = R"yaml(model:
  script: model.py
  args: [--steps, "2"]
  python: /opt/py/bin/python
  backend: aot_eager
  dtype: bfloat16
  env: {A: "1"}
steps:
  - id: check
    kind: run
    argv: [true]
)yaml";

TEST(PluginRun, ScriptRunsThroughThePluginWithItsSpec) {
  TempDir dir;
  Workflow workflow = load(dir, kWorkflow);
  State state;
  StepContext context(workflow, workflow.steps[0], state, dir / "run", nullptr);
  Diagnostics diagnostics("wf.yaml");
  RunOverrides side = RunOverrides::parse(YAML::Load(R"yaml(
mode: eager
device: cuda
dtype: null
dump: {level: aten, io: [output]}
switches: {inductor: {fallback_random: true}, fusion_switch_file: rules.cfg}
args: [--extra]
env: {B: "2"}
timeout: 30
)yaml"),
                                          diagnostics);
  EXPECT_TRUE(diagnostics.empty());
  RunSpec defaults = spec_of("compiled", dump_at("fx"));
  defaults.dump->final = true;
  RunSpec typed = side_spec(context, side, defaults);
  nlohmann::json spec = typed;
  EXPECT_EQ(spec["mode"], "eager");
  EXPECT_EQ(spec["backend"], "aot_eager");
  EXPECT_EQ(spec["device"], "cuda");
  EXPECT_FALSE(spec.contains("dtype"));  // null: the plugin's default (as written)
  EXPECT_EQ(spec["dump"], (nlohmann::json{{"level", "aten"}, {"final", true}, {"io", {"output"}}}));
  EXPECT_EQ(spec["switches"]["inductor"]["fallback_random"], true);
  EXPECT_EQ(spec["switches"]["fusion_switch_file"], workflow.dir + "/rules.cfg");

  RunRequest run = plugin_run(context, "target", typed, side);
  std::vector<std::string> argv = {
      "/opt/py/bin/python", "-m", "diagnose_pytorch", "run", workflow.dir + "/model.py", "--steps", "2", "--extra"};
  EXPECT_EQ(run.argv, argv);
  EXPECT_EQ(run.dir, dir / "run/steps/check/target");
  EXPECT_EQ(run.dump_dir, run.dir + "/dump");
  EXPECT_EQ(run.timeout_s, 30);
  EXPECT_EQ(run.env["A"], "1");
  EXPECT_EQ(run.env["B"], "2");
  EXPECT_EQ(run.env["DIAGNOSE_RUN_SPEC"], run.dir + "/spec.json");
  nlohmann::json written = read_json(run.dir + "/spec.json");
  EXPECT_EQ(written["output_dir"], run.dir);
  EXPECT_EQ(written["dump"]["level"], "aten");
  EXPECT_EQ(plugin_status_path(run), run.dir + "/status.json");

  // A changed spec changes the command's environment, so --resume does not keep the old run.
  typed.dump->level = "none";
  RunRequest changed = plugin_run(context, "target", typed, side);
  EXPECT_NE(changed.env["DIAGNOSE_RUN_SPEC_DIGEST"], run.env["DIAGNOSE_RUN_SPEC_DIGEST"]);
}

TEST(PluginRun, SideIsADumpPathOrARun) {
  Diagnostics diagnostics("wf.yaml");
  Side absent = Side::parse(YAML::Node(YAML::NodeType::Undefined), diagnostics);
  EXPECT_FALSE(absent.given);
  EXPECT_EQ(nlohmann::json(absent.run.spec.set), nlohmann::json::object());
  EXPECT_TRUE(absent.run.spec.reset.empty());
  Side dump = Side::parse(YAML::Node("runs/golden/dump"), diagnostics);
  EXPECT_TRUE(dump.given);
  EXPECT_EQ(dump.path, std::optional<std::string>("runs/golden/dump"));
  Side run =
      Side::parse(YAML::Load("{argv: [python, m.py, '${switch_file}'], cwd: w, dump: out, dtype: float16, mode: null}"),
                  diagnostics);
  EXPECT_FALSE(run.path);
  EXPECT_EQ(run.run.command.argv, (std::vector<std::string>{"python", "m.py", "${switch_file}"}));
  EXPECT_EQ(run.run.command.cwd, std::optional<std::string>("w"));
  EXPECT_EQ(run.run.dump_path, std::optional<std::string>("out"));
  EXPECT_EQ(run.run.spec.set.dtype, std::optional<std::string>("float16"));
  EXPECT_EQ(run.run.spec.reset, std::set<std::string>{"mode"});
  RunOverrides plugin_dump = RunOverrides::parse(YAML::Load("{dump: {level: aten}}"), diagnostics);
  EXPECT_FALSE(plugin_dump.dump_path);
  EXPECT_EQ(plugin_dump.spec.set.dump->level, std::optional<std::string>("aten"));
  EXPECT_TRUE(diagnostics.empty());
}

TEST(PluginRun, SideSpecFieldsTheSchemaLetThroughAreCheckedWithTheirPosition) {
  Diagnostics diagnostics("wf.yaml");
  RunOverrides::parse(YAML::Load("mode: eager\nchecks:\n  meta: 3\n  metaa: true\n"), diagnostics);
  std::vector<std::string> messages;
  for (const Diagnostic& d : diagnostics.list()) messages.push_back(format_diagnostic(d));
  EXPECT_EQ(messages, (std::vector<std::string>{"wf.yaml:3:9: error: checks.meta has the wrong type: 3",
                                                "wf.yaml:4:10: error: unknown key in checks: metaa"}));
}

TEST(PluginRun, ModelDefaultsWithoutSide) {
  TempDir dir;
  Workflow workflow = load(dir, "model: {script: m.py}\nsteps: [{id: a, kind: run, argv: [true]}]\n");
  State state;
  StepContext context(workflow, workflow.steps[0], state, dir / "run", nullptr);
  nlohmann::json spec = side_spec(context, RunOverrides(), RunSpec());
  EXPECT_EQ(spec, (nlohmann::json{{"backend", "inductor"}, {"device", "cpu"}}));
  unsetenv("DIAGNOSE_PYTHON");
  EXPECT_EQ(context.model_python(), "python3");
  setenv("DIAGNOSE_PYTHON", "/venv/python", 1);
  EXPECT_EQ(context.model_python(), "/venv/python");
  unsetenv("DIAGNOSE_PYTHON");
}

TEST(PluginRun, ModelWithoutScriptIsAClearError) {
  TempDir dir;
  Workflow workflow = load(dir, "model: {argv: [python, m.py]}\nsteps: [{id: a, kind: run}]\n");
  State state;
  StepContext context(workflow, workflow.steps[0], state, dir / "run", nullptr);
  try {
    plugin_run(context, "main", nlohmann::json::object(), RunOverrides());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("give model.script"), std::string::npos) << e.what();
  }
}

TEST(PluginRun, YamlScalarsBecomeJsonTypes) {
  nlohmann::json j = yaml_to_json(YAML::Load("{a: true, b: 3, c: 1.5e-3, d: null, e: '3', f: text, g: [1, x]}"));
  EXPECT_EQ(j, (nlohmann::json{
                   {"a", true}, {"b", 3}, {"c", 1.5e-3}, {"d", nullptr}, {"e", "3"}, {"f", "text"}, {"g", {1, "x"}}}));
}

TEST(PluginRun, SwitchesFileHoldsTheSetSwitchesOnly) {
  TempDir dir;
  RunSwitches off;
  off.inductor_off = std::vector<std::string>{"fallback_random", "pattern_matcher"};
  const std::string path = write_switches_file(dir / "rules", off);
  EXPECT_EQ(path, dir / "rules/switches.json");
  EXPECT_EQ(testing_support::read_text(path),
            "{\n  \"inductor_off\": [\n    \"fallback_random\",\n    \"pattern_matcher\"\n  ]\n}\n");
}

TEST(PluginRun, ModelSectionErrors) {
  EXPECT_EQ(load_errors("model:\n  script: m.py\n  argv: [python]\nsteps: [{id: a, kind: run}]\n"),
            std::vector<std::string>{"wf.yaml:3:9: error: model: give either script or argv, not both"});
  EXPECT_EQ(load_errors("model:\n  shell: python m.py\n  script: m.py\nsteps: [{id: a, kind: run}]\n"),
            std::vector<std::string>{"wf.yaml:2:10: error: model: give either script or shell, not both"});
  EXPECT_EQ(load_errors("model:\n  args: [-x]\nsteps: [{id: a, kind: run}]\n"),
            std::vector<std::string>{"wf.yaml:2:9: error: model: args are the arguments of a script; give script too"});
  EXPECT_EQ(load_errors("model:\n  script: m.py\n  dtype: fp16\nsteps: [{id: a, kind: run}]\n").size(), 1u);
  EXPECT_TRUE(
      load_errors("model: {script: m.py, args: [-x], backend: eager, device: cpu}\nsteps: [{id: a, kind: run}]\n")
          .empty());
}

TEST(WorkflowExtends, TheBaseWithThisFilesTopLevelKeys) {
  TempDir dir;
  testing_support::write_text(dir / "base/flow.yaml",
                              "name: base\nmodel: {argv: [python, m.py]}\ndefaults: {slots: 2}\n"
                              "steps:\n  - {id: a, kind: run}\n  - {id: b, kind: run}\n");
  Workflow workflow = load(dir, "extends: base/flow.yaml\nmodel: {script: mine.py, backend: aot_eager}\n");
  EXPECT_EQ(workflow.name, "wf");  // this file's stem: a base's name is not inherited
  EXPECT_EQ(workflow.defaults.slots, 2);
  ASSERT_EQ(workflow.steps.size(), 2u);
  EXPECT_EQ(workflow.steps[1].id, "b");
  EXPECT_EQ(workflow.model.script, "mine.py");
  EXPECT_EQ(workflow.model.backend, "aot_eager");
  EXPECT_TRUE(workflow.model.command.argv.empty());  // the model is replaced, not merged
}

TEST(WorkflowExtends, ErrorsNameTheBaseFile) {
  TempDir dir;
  testing_support::write_text(dir / "base.yaml", "model: {argv: [python]}\nsteps:\n  - {id: a, kind: runn}\n");
  std::string path = dir / "wf.yaml";
  testing_support::write_text(path, "name: x\nextends: base.yaml\n");
  Diagnostics diagnostics(path);
  EXPECT_FALSE(load_workflow(path, diagnostics));
  ASSERT_EQ(diagnostics.list().size(), 1u);
  std::string message = format_diagnostic(diagnostics.list()[0]);
  EXPECT_EQ(message.rfind(
                path + ":2:10: error: extends: " + dir / "base.yaml" + ":3:19: steps.a: unknown step kind 'runn'", 0),
            0u)
      << message;
  EXPECT_EQ(load_errors("extends: missing.yaml\nmodel: {argv: [x]}\n"),
            std::vector<std::string>{"wf.yaml:1:10: error: extends: missing.yaml: cannot read the workflow file"});
  testing_support::write_text(dir / "chain.yaml", "extends: base.yaml\n");
  testing_support::write_text(path, "extends: chain.yaml\n");
  Diagnostics chained(path);
  EXPECT_FALSE(load_workflow(path, chained));
  ASSERT_EQ(chained.list().size(), 1u);
  EXPECT_NE(chained.list()[0].message.find("extends another workflow itself"), std::string::npos);
}

TEST(WorkflowExtends, TheStandardWorkflowAndEveryExampleValidate) {
  std::vector<std::string> files = {source_dir() + "/workflows/graph-mode-precision.yaml"};
  for (const auto& entry : boost::filesystem::directory_iterator(source_dir() + "/examples")) {
    if (boost::filesystem::exists(entry.path() / "workflow.yaml"))
      files.push_back((entry.path() / "workflow.yaml").string());
  }
  EXPECT_GE(files.size(), 8u);
  for (const std::string& file : files) {
    Diagnostics diagnostics(file);
    std::optional<Workflow> workflow = load_workflow(file, diagnostics);
    for (const Diagnostic& d : diagnostics.list()) ADD_FAILURE() << format_diagnostic(d);
    if (workflow) {
      EXPECT_FALSE(workflow->model.script.empty()) << file;
    }
  }
}

}  // namespace
}  // namespace diagnose
