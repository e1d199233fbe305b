#include "orchestrator/workflow/workflow_schema.h"

#include "orchestrator/workflow/runner_section.h"
#include "orchestrator/workflow/step_kind_declaration.h"
#include "orchestrator/workflow/verdict_categories.h"

namespace diagnose {

std::vector<Property> command_properties() {
  return {
      optional("argv", array_schema("The command line, without any shell: program and arguments. "
                                    "Replaces the model's command.",
                                    string_schema("one argument; ${...} references are expanded"))),
      optional("shell", string_schema("A command for /bin/sh -c, when shell syntax is really needed. "
                                      "Replaces the model's command.")),
      optional("args", array_schema("Arguments appended to the model's command.", string_schema("one argument"))),
      optional("env", map_schema("Environment variables set for the process, on top of the engine's environment.",
                                 string_schema("value"))),
      optional("cwd", string_schema("Working directory, relative to the workflow file's directory.")),
      optional("timeout", number_schema("Seconds before the process and its children are killed.", 0, true)),
      optional("retries", integer_schema("How many times a run that crashed or timed out is started again.", 0)),
      optional("outputs", array_schema("Paths the run must have created (e.g. its dump directory).",
                                       string_schema("path, relative to the run's working directory"))),
  };
}

std::vector<std::string> diagnosable_categories() {
  std::vector<std::string> names;
  for (const VerdictCategory& c : verdict_categories())
    if (c.diagnosable) names.push_back(c.name);
  return names;
}

Schema model_schema() {
  std::vector<Property> properties;
  for (Property& p : command_properties()) {
    if (p.name == "args") p.schema.description = "Arguments of the script (with `script` only).";
    if (p.name != "outputs") properties.push_back(std::move(p));
  }
  properties.push_back(optional("script", string_schema("A Python script run through the PyTorch plugin "
                                                        "(python -m diagnose_pytorch run), relative to the "
                                                        "workflow file; the diagnostic step kinds need it.")));
  properties.push_back(optional("python", string_schema("The Python interpreter for `script`. Default: "
                                                        "$DIAGNOSE_PYTHON, the python3 beside the diagnose binary (the "
                                                        "environment a wheel installed it into), else python3.")));
  properties.push_back(optional("backend", defaulted(string_schema("torch.compile backend of graph-mode runs: eager, "
                                                                   "aot_eager, aot_eager_decomp_partition, inductor, "
                                                                   "torchair or module:function."),
                                                     ModelSpec{}.backend)));
  properties.push_back(
      optional("device", defaulted(string_schema("Device the model runs on: cpu, cuda, npu..."), ModelSpec{}.device)));
  properties.push_back(optional("dtype", string_schema("Cast the model and its floating inputs (default: as written).",
                                                       {"float32", "float64", "float16", "bfloat16"})));
  return object_schema(
      "How to run the user's model: one of argv, shell or script (with args, backend, device, "
      "dtype), plus cwd, env, timeout, retries.",
      properties);
}

Schema tolerance_preset_schema() {
  return object_schema(
      "Fields of one tolerance preset (compare/judge.h).",
      {optional("atol", number_schema("absolute tolerance of the allclose rule", 0)),
       optional("rtol", number_schema("relative tolerance of the allclose rule", 0)),
       optional("min_cosine", number_schema("cosine similarity a row needs under the metric rule", -1)),
       optional("max_relative_l2", number_schema("relative euclidean distance bound of the metric rule", 0)),
       optional("exact", boolean_schema("any difference fails")),
       optional("referee_multiplier", number_schema("three-way rule multiplier", 0))});
}

Property tolerances_property(const std::string& description, Schema fields) {
  return optional("tolerances", map_schema(description, std::move(fields)));
}

std::vector<compare::ToleranceOverride> tolerance_overrides(const YAML::Node& node, Diagnostics* diagnostics) {
  std::vector<compare::ToleranceOverride> out;
  if (!node || !node.IsMap()) return out;
  compare::Tolerances tolerances = compare::Tolerances::defaults();
  std::vector<std::string> presets;
  for (const auto& [name, preset] : tolerances.presets) presets.push_back(name);
  for (const auto& preset : node) {
    const std::string name = preset.first.Scalar();
    if (!tolerances.presets.count(name)) {
      if (diagnostics)
        diagnostics->error(preset.first.Mark(),
                           "tolerances: unknown preset '" + name + "'" + did_you_mean(name, presets));
      continue;
    }
    if (!preset.second.IsMap()) continue;
    for (const auto& field : preset.second) {
      compare::ToleranceOverride o;
      std::string error = compare::make_tolerance_override(name, field.first.Scalar(), field.second.Scalar(), &o);
      if (error.empty()) error = tolerances.apply(o);
      if (error.empty())
        out.push_back(std::move(o));
      else if (diagnostics)
        diagnostics->error(field.second.Mark(), "tolerances: " + error);
    }
  }
  return out;
}

Schema defaults_schema() {
  return object_schema(
      "Settings shared by every step.",
      {optional("slots",
                defaulted(integer_schema("How many model runs may execute at the same time.", 1), Defaults{}.slots)),
       optional("output_dir",
                defaulted(plain_string_schema("Where run directories are created, relative to the current directory."),
                          Defaults{}.output_dir)),
       optional("timeout",
                defaulted(number_schema("Seconds per run unless the model or the step says otherwise.", 0, true),
                          Defaults{}.timeout_s)),
       optional("kill_grace", defaulted(number_schema("Seconds between SIGTERM and SIGKILL when a run is stopped.", 0),
                                        Defaults{}.kill_grace_s)),
       optional("dump_budget",
                defaulted(integer_schema("Bytes of tensor files the op dumps of one diagnosis may keep, split evenly "
                                         "over them; past its share a dump keeps statistics only. 0: no limit.",
                                         0),
                          Defaults{}.dump_budget)),
       tolerances_property("Tolerance overrides by preset name (fp32, fp16, bf16, fp8, exact...).")});
}

Schema verdict_schema() {
  std::vector<std::string> categories = diagnosable_categories();
  return object_schema("Overrides of the verdict rules.",
                       {optional("order", array_schema("Category priority when several steps fail; the first wins.",
                                                       string_schema("category", categories))),
                        optional("advice", map_schema("Text replacing the built-in advice of a category.",
                                                      plain_string_schema("advice")))});
}

Schema report_schema() {
  return object_schema(
      "Which reports to write into the run directory.",
      {optional("formats", array_schema("Report formats.", string_schema("format", {"md", "json", "junit", "html"})))});
}

Schema step_schema(const StepKindDeclaration& kind) {
  std::vector<Property> properties = {
      required("id", plain_string_schema("Unique name of the step: letters, digits, '_' and '-'.")),
      required("kind", string_schema(kind.description(), {kind.name()})),
      optional("description", plain_string_schema("What the step is for, shown in reports.")),
      optional("when", condition_schema("Run the step only when this condition on earlier steps holds.")),
      optional("on_failure", string_schema("What to do when the step fails or errors.", {"stop", "continue"})),
      optional("diagnoses", string_schema("Verdict category this step's failure indicates.", diagnosable_categories())),
      optional("runner", runner_schema()),
  };
  for (Property& p : kind.parameters()) properties.push_back(std::move(p));
  return object_schema("A step of kind '" + kind.name() + "'.", properties);
}

Schema workflow_schema() {
  std::vector<Schema> steps;
  for (const StepKindDeclaration* kind : declared_step_kinds()) steps.push_back(step_schema(*kind));
  Schema step = any_of_schema("A step; its kind decides which keys it takes.", steps);
  return object_schema(
      "A diagnose workflow.",
      {optional("name",
                plain_string_schema("Name of the workflow, used in run directory names. Default: the file's stem.")),
       optional("description", plain_string_schema("What the workflow diagnoses.")),
       optional("extends", plain_string_schema("A workflow file (relative to this one) whose keys this file's "
                                               "top-level keys replace, e.g. a standard workflow with your model.")),
       required("model", model_schema()), optional("defaults", defaults_schema()),
       required("steps", array_schema("The steps, run in this order.", step)), optional("verdict", verdict_schema()),
       optional("report", report_schema()), optional("runner", runner_schema())});
}

nlohmann::json workflow_json_schema() {
  nlohmann::json schema = to_json_schema(workflow_schema());
  schema["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  schema["$id"] = "https://diagnose.dev/schemas/workflow-1.json";
  schema["title"] = "diagnose workflow";
  return schema;
}

}  // namespace diagnose
