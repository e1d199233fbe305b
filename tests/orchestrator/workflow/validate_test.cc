// `diagnose validate`: malformed workflows, each with its exact message and position.
#include <gtest/gtest.h>

#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

struct MalformedWorkflow {
  const char* name;
  const char* yaml;
  const char* first_error;  // exactly as printed
  size_t error_count;
};

std::vector<std::string> errors_for(const std::string& yaml) {
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(yaml, "wf.yaml", diagnostics);
  std::vector<std::string> messages;
  for (const Diagnostic& d : diagnostics.list()) messages.push_back(format_diagnostic(d));
  EXPECT_EQ(workflow.has_value(), messages.empty());
  return messages;
}

const MalformedWorkflow kMalformed[] = {
    {"args_with_argv",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    argv: [ls]
    args: [-l]
)yaml",
     "wf.yaml:6:11: error: steps.a: args extends the model's command; it cannot be used with argv", 1},
    {"argv_and_shell",
     R"yaml(model:
  argv: [python]
  shell: python model.py
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:10: error: model: give either argv or shell, not both", 1},
    {"argv_not_list",
     R"yaml(model:
  argv: python model.py
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:2:9: error: model.argv must be a list, got 'python model.py'", 1},
    {"bad_condition",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run}
  - id: b
    kind: assert
    fail_if: steps.a.status = fail
)yaml",
     "wf.yaml:6:29: error: condition: '=' is not an operator; use '=='", 1},
    {"bad_id",
     R"yaml(model: {argv: [python]}
steps:
  - {id: "my step", kind: run}
)yaml",
     "wf.yaml:3:10: error: step id 'my step' may only hold letters, digits, '_' and '-'", 1},
    {"bad_tolerance_field",
     R"yaml(model: {argv: [python]}
defaults:
  tolerances:
    fp16: {rtoll: 1e-3}
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:4:12: error: defaults.tolerances.fp16: unknown key 'rtoll' (did you mean 'rtol'?)", 1},
    {"bad_tolerance_preset",
     R"yaml(model: {argv: [python]}
defaults:
  tolerances:
    fp61: {rtol: 1e-3}
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:4:5: error: tolerances: unknown preset 'fp61' (did you mean 'fp64'?)", 1},
    {"bad_tolerance_value",
     R"yaml(model: {argv: [python]}
defaults:
  tolerances:
    fp16: {rtol: -1}
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:4:18: error: defaults.tolerances.fp16.rtol must be at least 0, got -1", 1},
    {"compare_missing_target",
     R"yaml(model: {argv: [python]}
steps:
  - id: c
    kind: compare
    golden: dumps/eager
)yaml",
     "wf.yaml:3:5: error: steps.c: missing required key 'target'", 1},
    {"cycle",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    when: steps.b.status == pass
  - id: b
    kind: run
    when: steps.a.status == pass
)yaml",
     "wf.yaml:8:11: error: cycle in step references: a -> b -> a", 1},
    {"diagnoses_bad",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    diagnoses: eager_defect
)yaml",
     "wf.yaml:5:16: error: steps.a.diagnoses: unknown value 'eager_defect' (did you mean 'state_defect'?); expected "
     "one "
     "of: single_op_graph_defect, "
     "eager_device_defect, dynamo_meta_defect, known_cause, fusion_defect, user_pass_defect, state_defect, "
     "subgraph_defect, "
     "localized_op_defect, unconfirmed_divergence, "
     "precision_problem",
     1},
    {"duplicate_id",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run}
  - {id: a, kind: run}
)yaml",
     "wf.yaml:4:10: error: duplicate step id 'a'", 1},
    {"duplicate_key",
     R"yaml(model:
  argv: [python]
  argv: [python3]
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:3: error: model: duplicate key 'argv'", 1},
    {"empty_steps",
     R"yaml(model: {argv: [python]}
steps: []
)yaml",
     "wf.yaml:2:8: error: steps: a workflow needs at least one step", 1},
    {"later_ref",
     R"yaml(model: {argv: [python]}
steps:
  - id: first
    kind: run
    when: steps.second.status == pass
  - {id: second, kind: run}
)yaml",
     "wf.yaml:5:11: error: step 'first' refers to step 'second', which comes later (steps run in the order written)",
     1},
    {"env_bad_name",
     R"yaml(model:
  argv: [python]
  env: {"A=B": 1}
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:9: error: model.env: 'A=B' is not a valid variable name", 1},
    {"run_name_bad",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    runs:
      "eager mode": {args: [--eager]}
)yaml",
     "wf.yaml:6:7: error: run name 'eager mode' may only hold letters, digits, '_' and '-'", 1},
    {"compare_side_form",
     R"yaml(model: {argv: [python]}
steps:
  - id: c
    kind: compare
    golden: {argv: [x], shell: y}
    target: dumps/graph
)yaml",
     "wf.yaml:5:32: error: steps.c.golden: give either argv or shell, not both", 1},
    {"compare_bad_preset",
     R"yaml(model: {argv: [python]}
steps:
  - id: c
    kind: compare
    golden: a
    target: b
    preset: fp322
)yaml",
     "wf.yaml:7:13: error: steps.c.preset: unknown tolerance preset 'fp322' (did you mean 'fp32'?)", 1},
    {"missing_id",
     R"yaml(model: {argv: [python]}
steps:
  - kind: run
)yaml",
     "wf.yaml:3:5: error: steps[0]: missing required key 'id'", 1},
    {"missing_kind",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
)yaml",
     "wf.yaml:3:5: error: steps.a: missing required key 'kind'", 1},
    {"missing_model",
     R"yaml(steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:1:1: error: top level: missing required key 'model'", 1},
    {"missing_steps",
     R"yaml(model: {argv: [python]}
)yaml",
     "wf.yaml:1:1: error: top level: missing required key 'steps'", 1},
    {"model_refs_step",
     R"yaml(model:
  argv: [python, "${steps.a.status}"]
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:2:19: error: 'steps.a.status': only steps can refer to other steps' results", 1},
    {"negative_timeout",
     R"yaml(model:
  argv: [python]
  timeout: -5
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:12: error: model.timeout must be greater than 0, got -5", 1},
    {"no_command",
     R"yaml(model:
  cwd: .
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:2:3: error: model: missing 'argv' or 'shell'", 1},
    {"not_mapping",
     R"yaml(- just
- a list
)yaml",
     "wf.yaml:1:1: error: a workflow must be a mapping with model and steps", 1},
    {"on_failure_value",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    on_failure: ignore
)yaml",
     "wf.yaml:5:17: error: steps.a.on_failure: unknown value 'ignore'; expected one of: stop, continue", 1},
    {"quoted_condition",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run}
  - id: b
    kind: assert
    fail_if: "steps.a.status == fail && foo"
)yaml",
     "wf.yaml:6:41: error: condition: unknown name 'foo': refer to results as steps.<id>.<field>, quote other strings",
     1},
    {"report_format",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run}
report:
  formats: [md, spreadsheet]
)yaml",
     "wf.yaml:5:17: error: report.formats[1]: unknown value 'spreadsheet'; expected one of: md, json, junit, html", 1},
    {"retries_float",
     R"yaml(model:
  argv: [python]
  retries: 1.5
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:12: error: model.retries must be an integer, got '1.5'", 1},
    {"self_ref",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    args: ["${steps.a.dump_dir}"]
)yaml",
     "wf.yaml:5:13: error: cycle in step references: a -> a", 1},
    {"slots_zero",
     R"yaml(model: {argv: [python]}
defaults:
  slots: 0
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:10: error: defaults.slots must be at least 1, got 0", 1},
    {"step_not_mapping",
     R"yaml(model: {argv: [python]}
steps:
  - run
)yaml",
     "wf.yaml:3:5: error: steps[0] must be a mapping with id and kind", 1},
    {"syntax",
     R"yaml(model:
  argv: [python, model.py
steps: []
)yaml",
     "wf.yaml:3:6: error: YAML syntax: end of sequence flow not found", 1},
    {"tab_syntax",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run
)yaml",
     "wf.yaml:4:1: error: YAML syntax: end of map flow not found", 1},
    {"unknown_field",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run}
  - id: c
    kind: compare
    golden: x
    target: y
  - id: d
    kind: assert
    fail_if: steps.c.faild > 0
)yaml",
     "wf.yaml:10:14: error: step 'c' (kind compare) has no result field 'faild' (did you mean 'failed'?)", 1},
    {"unknown_kind",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: compre
)yaml",
     "wf.yaml:4:11: error: steps.a: unknown step kind 'compre' (did you mean 'compare'?); known kinds: run, compare, "
     "assert, gate, fusion_bisect, single_op_check, eager_device_vs_cpu, dynamo_meta_check, graph_dump_compare, "
     "subgraph_isolate, known_causes",
     1},
    {"unknown_model_key",
     R"yaml(model:
  argv: [python, m.py]
  tiemout: 10
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:3: error: model: unknown key 'tiemout' (did you mean 'timeout'?)", 1},
    {"unknown_param",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    agrs: [--fast]
)yaml",
     "wf.yaml:5:5: error: steps.a: unknown key 'agrs' (did you mean 'args'?)", 1},
    {"unknown_step_ref",
     R"yaml(model: {argv: [python]}
steps:
  - {id: eager, kind: run}
  - id: check
    kind: assert
    fail_if: steps.eagr.status == fail
)yaml",
     "wf.yaml:6:14: error: reference to unknown step 'eagr' (did you mean 'eager'?)", 1},
    {"unknown_template",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    args: [--dump, "${run.dumpdir}"]
)yaml",
     "wf.yaml:5:21: error: unknown reference '${run.dumpdir}' (did you mean 'run.dump_dir'?); known: run_dir, "
     "workflow_dir, workflow_name, step.*, run.*, steps.<id>.<field>, env.<NAME>",
     1},
    {"unknown_top",
     R"yaml(model: {argv: [python]}
stpes: []
)yaml",
     "wf.yaml:2:1: error: top level: unknown key 'stpes' (did you mean 'steps'?)", 2},
    {"unterminated_template",
     R"yaml(model: {argv: [python]}
steps:
  - id: a
    kind: run
    args: [--dump, "${run.dump_dir"]
)yaml",
     "wf.yaml:5:21: error: template: '${' without a closing '}'", 1},
    {"verdict_order_bad",
     R"yaml(model: {argv: [python]}
steps:
  - {id: a, kind: run}
verdict:
  order: [fusion_defect, single_op_defect]
)yaml",
     "wf.yaml:5:26: error: verdict.order[1]: unknown value 'single_op_defect'; expected one of: "
     "single_op_graph_defect, eager_device_defect, dynamo_meta_defect, known_cause, fusion_defect, user_pass_defect, "
     "state_defect, "
     "subgraph_defect, "
     "localized_op_defect, unconfirmed_divergence, precision_problem",
     1},
    {"bad_layers_regex",
     R"yaml(model: {argv: [python]}
steps:
  - id: gate
    kind: gate
    layers: ["^mlp", "norm("]
)yaml",
     "wf.yaml:5:22: error: steps.gate.layers: bad regular expression 'norm(': Mismatched '(' and ')' in regular "
     "expression",
     1},
    {"plugin_side_dump_as_path",
     R"yaml(model: {script: model.py}
steps:
  - id: fusion
    kind: fusion_bisect
    target: {dump: out}
)yaml",
     "wf.yaml:5:20: error: steps.fusion.target.dump: a run of the model's script takes the plugin's dump spec "
     "({level: ..., include: ...}), not a path",
     1},
    {"subgraph_trials_with_an_op_dump",
     R"yaml(model: {script: model.py}
steps:
  - id: subgraph
    kind: subgraph_isolate
    target: {dump: {level: aten}}
)yaml",
     "wf.yaml:5:28: error: steps.subgraph.target.dump.level: must be none (a trial is judged on its final outputs; "
     "the plugin splits graphs only without a per-op dump)",
     1},
    {"command_side_dump_as_spec",
     R"yaml(model: {argv: [python, model.py, "${switch_file}"]}
steps:
  - id: fusion
    kind: fusion_bisect
    golden: {dump: {level: aten}}
)yaml",
     "wf.yaml:5:20: error: steps.fusion.golden.dump: a command run takes the path where it leaves its dump", 1},
    {"bad_judge_ops_regex",
     R"yaml(model: {argv: [python, model.py, "${switch_file}"]}
steps:
  - id: fusion
    kind: fusion_bisect
    judge: exit_code
    judge_ops: ["[mean"]
)yaml",
     "wf.yaml:6:17: error: steps.fusion.judge_ops: bad regular expression '[mean': Unexpected character within '[...]' "
     "in regular expression",
     1},
    {"wrong_type_timeout",
     R"yaml(model:
  argv: [python]
  timeout: soon
steps:
  - {id: a, kind: run}
)yaml",
     "wf.yaml:3:12: error: model.timeout must be a number, got 'soon'", 1},
};

class Malformed : public testing::TestWithParam<MalformedWorkflow> {};

TEST_P(Malformed, ReportsTheExactErrorAndPosition) {
  const MalformedWorkflow& c = GetParam();
  std::vector<std::string> errors = errors_for(c.yaml);
  ASSERT_EQ(errors.size(), c.error_count) << c.name << ": " << testing::PrintToString(errors);
  EXPECT_EQ(errors.front(), c.first_error);
}

INSTANTIATE_TEST_SUITE_P(Workflows, Malformed, testing::ValuesIn(kMalformed),
                         [](const testing::TestParamInfo<MalformedWorkflow>& info) {
                           return std::string(info.param.name);
                         });

TEST(Validate, AcceptsAFullWorkflow) {
  const char* yaml = R"yaml(name: demo
model:
  argv: [python, model.py, --seed, 0]
  cwd: .
  env: {PYTHONHASHSEED: 0}
  timeout: 60
  retries: 1
defaults:
  slots: 2
  output_dir: runs
  tolerances:
    fp16: {atol: 1e-3, rtol: 1e-3}
steps:
  - id: eager
    kind: run
    args: [--dump, "${run.dump_dir}"]
    outputs: ["${run.dump_dir}"]
  - id: graph
    kind: run
    runs:
      inductor: {args: [--backend, inductor, --dump, "${run.dump_dir}"]}
      aot: {args: [--backend, aot_eager, --dump, "${run.dump_dir}"], env: {X: 1}}
  - id: cmp
    kind: compare
    golden: ${steps.eager.dump_dir}
    target: ${steps.graph.runs.inductor.dump_dir}
    tolerances: {fp32: {rtol: 1e-4}}
    when: steps.graph.status == pass && steps.graph.runs.aot.exit_code == 0
    on_failure: continue
    diagnoses: localized_op_defect
  - id: paired
    kind: compare
    golden: {args: [--mode, eager]}
    target: {args: [--mode, graph], dump: "${run.dir}/out"}
  - id: gate
    kind: assert
    fail_if: steps.cmp.failed > 3 or (steps.paired.status == fail and not steps.cmp.source_ops)
    message: "${steps.cmp.failed} rows failed"
verdict:
  order: [fusion_defect]
  advice: {fusion_defect: "turn the rule off"}
report:
  formats: [json, junit]
)yaml";
  EXPECT_EQ(errors_for(yaml), std::vector<std::string>{});
}

TEST(Validate, UnreadableFileNamesTheFile) {
  Diagnostics diagnostics("/nonexistent/wf.yaml");
  EXPECT_FALSE(load_workflow("/nonexistent/wf.yaml", diagnostics));
  ASSERT_EQ(diagnostics.list().size(), 1u);
  EXPECT_EQ(format_diagnostic(diagnostics.list()[0]), "/nonexistent/wf.yaml: error: cannot read the workflow file");
}

TEST(Validate, BinaryGarbageIsAnErrorNotACrash) {
  std::string garbage = "\x01\x02\xff\xfe: [\n\t\"";
  EXPECT_FALSE(errors_for(garbage).empty());
  EXPECT_FALSE(errors_for("").empty());
  EXPECT_FALSE(errors_for("~").empty());
  EXPECT_FALSE(errors_for("model: {argv: [python]}\nsteps: [[], {}, 3, null]").empty());
}

TEST(Validate, DefaultTolerancesAreLoadedAsTypedOverrides) {
  Diagnostics diagnostics("wf.yaml");
  std::optional<Workflow> workflow = load_workflow_text(
      "model: {argv: [python]}\ndefaults: {tolerances: {fp16: {rtol: 1e-3}, bf16: {atol: 0.5}}}\n"
      "steps: [{id: a, kind: run}]\n",
      "wf.yaml", diagnostics);
  ASSERT_TRUE(workflow) << (diagnostics.list().empty() ? "" : diagnostics.list()[0].message);
  const std::vector<compare::ToleranceOverride>& overrides = workflow->defaults.tolerance_overrides;
  ASSERT_EQ(overrides.size(), 2u);
  EXPECT_EQ(overrides[0].assignment(), "fp16.rtol=1e-3");
  EXPECT_DOUBLE_EQ(overrides[0].value, 1e-3);
  EXPECT_EQ(overrides[1].preset, "bf16");
  EXPECT_DOUBLE_EQ(overrides[1].value, 0.5);
}

// Every single-character deletion, duplication and replacement of a valid workflow must
// give either a workflow or errors with positions, never an exception or a crash.
TEST(Validate, MutatedWorkflowsNeverCrash) {
  const std::string valid = R"yaml(model:
  argv: [python, m.py]
  env: {A: "1"}
defaults: {slots: 2, tolerances: {fp16: {rtol: 1e-3}}}
steps:
  - {id: a, kind: run, args: [--dump, "${run.dump_dir}"], runs: {x: {args: [y]}}}
  - {id: c, kind: compare, golden: "${steps.a.runs.x.dump_dir}", target: {args: [z]}, when: "steps.a.status == pass"}
  - {id: g, kind: assert, fail_if: "steps.c.failed > 1 || !(steps.c.source_ops)"}
)yaml";
  ASSERT_EQ(errors_for(valid), std::vector<std::string>{});
  const std::string replacements = "{}[]:,'\"#&*!|>%@`-?$ \n\t0a";
  size_t loaded = 0, rejected = 0;
  auto attempt = [&](const std::string& text) {
    Diagnostics diagnostics("wf.yaml");
    std::optional<Workflow> workflow;
    ASSERT_NO_THROW(workflow = load_workflow_text(text, "wf.yaml", diagnostics)) << text;
    (workflow ? loaded : rejected) += 1;
    for (const Diagnostic& d : diagnostics.list()) EXPECT_FALSE(d.message.empty());
  };
  // Every position; under the sanitizers (about 20x slower) every fifth, which still
  // reaches every line and key of the workflow.
  const size_t stride = DIAGNOSE_SANITIZED ? 5 : 1;
  for (size_t i = 0; i < valid.size(); i += stride) {
    attempt(valid.substr(0, i) + valid.substr(i + 1));
    attempt(valid.substr(0, i) + valid[i] + valid.substr(i));
    for (char c : replacements) attempt(valid.substr(0, i) + c + valid.substr(i + 1));
  }
  EXPECT_GT(loaded, 0u);
  EXPECT_GT(rejected, 1000u / stride);
}

namespace fs = boost::filesystem;
using testing_support::Finished;
using testing_support::run_diagnose;
using testing_support::source_dir;
using testing_support::TempDir;
using testing_support::write_text;

// The errors of a workflow file and of its model's paths, as a run or `diagnose validate` reports them.
std::vector<std::string> path_errors(const std::string& path) {
  Diagnostics diagnostics(path);
  std::optional<Workflow> workflow = load_workflow(path, diagnostics);
  if (workflow) check_model_paths(*workflow, diagnostics);
  std::vector<std::string> messages;
  for (const Diagnostic& d : diagnostics.list()) messages.push_back(format_diagnostic(d));
  return messages;
}

TEST(Validate, AMissingScriptOrCwdIsAnErrorAtItsValue) {
  TempDir dir;
  write_text(dir / "model.py", "");
  write_text(dir / "wf.yaml", "model:\n  script: modle.py\n  cwd: work\nsteps:\n  - {id: a, kind: run}\n");
  EXPECT_EQ(path_errors(dir / "wf.yaml"),
            (std::vector<std::string>{dir / "wf.yaml:2:11: error: model.script: " + dir / "modle.py does not exist",
                                      dir / "wf.yaml:3:8: error: model.cwd: " + dir / "work does not exist"}));
  // A directory is not a script, a file is not a working directory; a templated cwd waits for its run.
  write_text(dir / "wf.yaml", "model:\n  script: .\n  cwd: model.py\nsteps:\n  - {id: a, kind: run}\n");
  EXPECT_EQ(path_errors(dir / "wf.yaml"),
            (std::vector<std::string>{dir / "wf.yaml:2:11: error: model.script: " + dir.path() + " is not a file",
                                      dir / "wf.yaml:3:8: error: model.cwd: " + dir / "model.py is not a directory"}));
  write_text(dir / "wf.yaml", "model: {script: model.py, cwd: \"${run_dir}\"}\nsteps:\n  - {id: a, kind: run}\n");
  EXPECT_EQ(path_errors(dir / "wf.yaml"), std::vector<std::string>{});
}

TEST(Validate, ValidateAndRunRefuseAMissingScriptWithExitTwo) {
  TempDir dir;
  fs::create_directories(dir / "sub");
  write_text(dir / "sub/wf.yaml", "model:\n  script: model.py\nsteps:\n  - {id: a, kind: run}\n");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"validate", "sub/wf.yaml"}, {"sub/wf.yaml"}}) {
    Finished r = run_diagnose(args, dir.path());
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err, "sub/wf.yaml:2:11: error: model.script: " + dir / "sub/model.py does not exist\n");
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(dir / "runs"));
  write_text(dir / "sub/model.py", "");
  EXPECT_EQ(run_diagnose({"validate", "sub/wf.yaml"}, dir.path()).code, 0);
}

TEST(Validate, AnExtendingWorkflowIsNamedAfterItsFileAndResolvesTheBasesModelFromItsOwnDirectory) {
  TempDir dir;
  fs::create_directories(dir / "mine");
  write_text(dir / "model.py", "");
  write_text(dir / "base.yaml", "name: standard\nmodel:\n  script: model.py\nsteps:\n  - {id: a, kind: run}\n");
  write_text(dir / "mine/own.yaml", "extends: ../base.yaml\nmodel: {script: ../model.py}\n");
  Diagnostics diagnostics(dir / "mine/own.yaml");
  std::optional<Workflow> own = load_workflow(dir / "mine/own.yaml", diagnostics);
  ASSERT_TRUE(own) << testing::PrintToString(path_errors(dir / "mine/own.yaml"));
  EXPECT_EQ(own->name, "own");
  EXPECT_EQ(path_errors(dir / "mine/own.yaml"), std::vector<std::string>{});
  write_text(dir / "mine/named.yaml", "extends: ../base.yaml\nname: mine\nmodel: {script: ../model.py}\n");
  EXPECT_EQ(load_workflow(dir / "mine/named.yaml", diagnostics)->name, "mine");
  // The base's own model resolves against the extending file's directory, where it is missing:
  // the error points at the base's key.
  write_text(dir / "mine/inherits.yaml", "extends: ../base.yaml\n");
  EXPECT_EQ(path_errors(dir / "mine/inherits.yaml"),
            std::vector<std::string>{dir / "base.yaml:3:11: error: model.script: " + dir / "mine/model.py" +
                                     " does not exist (relative to " + dir / "mine/inherits.yaml" +
                                     ", which extends this file)"});
}

TEST(Validate, ExampleWorkflowsAreValid) {
  for (const char* name : {"workflows/minimal.yaml"}) {
    Diagnostics diagnostics(name);
    EXPECT_TRUE(load_workflow(source_dir() + "/" + name, diagnostics)) << name;
    for (const Diagnostic& d : diagnostics.list()) ADD_FAILURE() << format_diagnostic(d);
  }
  for (const char* name : {"workflows/graph-mode-precision.yaml", "workflows/minimal.yaml", "workflows/ci-gate.yaml"})
    EXPECT_EQ(path_errors(source_dir() + "/" + name), std::vector<std::string>{}) << name;
}

}  // namespace
}  // namespace diagnose
