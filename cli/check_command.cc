// diagnose check model.py [--backend B] [--device D] [--dtype T] [-- script args]: the standard
// workflow on a script with no YAML to write. What it runs, workflows/graph-mode-precision.yaml
// with its model: set to the script, is the run directory's workflow.yaml, to keep and edit.
#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/workflow_session.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_loader.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;

const char* const kStandardWorkflow = "graph-mode-precision.yaml";

// The standard workflow beside this binary: where a wheel puts it (<prefix>/bin/diagnose,
// <prefix>/share/diagnose/workflows) or in the source tree of a CMake build (build/orchestrator).
std::vector<fs::path> standard_workflow_places() {
  fs::path bin = fs::path(self_executable()).parent_path();
  return {bin / "../share/diagnose/workflows" / kStandardWorkflow, bin / "../../workflows" / kStandardWorkflow};
}

struct Arguments {
  std::string script, backend, device, dtype, output_dir;
  std::vector<std::string> args;
  bool quiet = false, json = false;
};

// The base's text with its model: block replaced by the script's, as `extends:` the base with
// this model: would have it, under a header that says where it came from.
std::string resolved_text(const std::string& base_path, const std::string& base_text, const Arguments& a,
                          const std::string& cwd) {
  YAML::Node model(YAML::NodeType::Map);
  model["script"] = absolute_path(a.script, cwd);
  YAML::Node args(YAML::NodeType::Sequence);
  for (const std::string& arg : a.args) args.push_back(arg);
  args.SetStyle(YAML::EmitterStyle::Flow);
  model["args"] = args;
  if (!a.backend.empty()) model["backend"] = a.backend;
  if (!a.device.empty()) model["device"] = a.device;
  if (!a.dtype.empty()) model["dtype"] = a.dtype;
  YAML::Emitter block;
  block << YAML::BeginMap << YAML::Key << "model" << YAML::Value << model << YAML::EndMap;

  std::string text = "# Written by diagnose check: " + base_path +
                     " with model: set to the script. Keep it, edit it, run it again\n"
                     "# with `diagnose <this file>` (its runs then start in this file's directory).\n";
  std::istringstream lines(base_text);
  bool in_model = false;
  for (std::string line; std::getline(lines, line);) {
    bool top_level_key = !line.empty() && line[0] != ' ' && line[0] != '#';
    if (top_level_key) in_model = line.rfind("model:", 0) == 0;
    if (in_model && line.rfind("model:", 0) == 0) text += std::string(block.c_str()) + "\n";
    if (!in_model) text += line + "\n";
  }
  return text;
}

// The backend object the script passes to torch.compile, as the `module:function` a workflow
// names it by (the plugin's script-backend command runs the script up to its first compiled
// call), so that the script runs with its own backend, as with that workflow; "" when it passes
// none (Inductor) or one no name gives back, which is said.
std::string script_backend(const Workflow& workflow, const std::string& cwd, bool quiet) {
  fs::path answer = fs::temp_directory_path() / fs::unique_path("diagnose-check-%%%%%%%%.json");
  ProcessSpec spec;
  spec.argv = {model_python(workflow), "-m", "diagnose_pytorch", "script-backend", workflow.model.script};
  spec.argv.insert(spec.argv.end(), workflow.model.command.args.begin(), workflow.model.command.args.end());
  spec.cwd = cwd;
  spec.stdout_path = answer.string();
  spec.stderr_path = "/dev/null";
  spec.timeout_s = 600;
  ProcessOutcome outcome = run_process(spec);
  std::optional<std::string> text = read_file(answer.string());
  boost::system::error_code ignored;
  fs::remove(answer, ignored);
  nlohmann::json found = nlohmann::json::parse(text.value_or(""), nullptr, false);
  if (outcome.status != RunStatus::Succeeded || !found.is_object()) {
    if (!quiet) std::cerr << "diagnose check: could not tell the script's backend: " << outcome.error << "\n";
    return "";
  }
  std::string backend = found.value("backend", nlohmann::json()).is_string() ? found["backend"].get<std::string>() : "";
  if (!quiet)
    std::cerr << "diagnose check: backend "
              << (backend.empty() ? "inductor (" + found.value("why", std::string()) + ")"
                                  : backend + " (the script's own)")
              << "\n";
  return backend;
}

int check(Arguments a) {
  std::string cwd = fs::current_path().string();
  std::string base_path;
  for (const fs::path& place : standard_workflow_places())
    if (fs::exists(place)) {
      base_path = absolute_path(place.string(), cwd);
      break;
    }
  if (base_path.empty()) {
    std::cerr << "diagnose check: the standard workflow is not beside this diagnose binary (looked for";
    for (const fs::path& place : standard_workflow_places()) std::cerr << " " << place.lexically_normal().string();
    std::cerr << ")\n";
    return kExitInfrastructure;
  }
  std::optional<std::string> base_text = read_file(base_path);
  if (!base_text) {
    std::cerr << "diagnose check: cannot read " << base_path << "\n";
    return kExitInfrastructure;
  }
  std::string text = resolved_text(base_path, *base_text, a, cwd);
  // Loaded as if written where diagnose check was started: the script runs there, as
  // `python model.py` would.
  std::string path = cwd + "/" + kStandardWorkflow;
  Diagnostics diagnostics(path);
  std::optional<Workflow> workflow = load_workflow_text(text, path, diagnostics);
  if (workflow) check_model_paths(*workflow, diagnostics);
  if (workflow && diagnostics.empty() && a.backend.empty()) {
    a.backend = script_backend(*workflow, cwd, a.quiet);
    if (!a.backend.empty()) {
      text = resolved_text(base_path, *base_text, a, cwd);
      workflow = load_workflow_text(text, path, diagnostics);
    }
  }
  diagnostics.print(std::cerr);
  if (!diagnostics.empty()) return kExitUsage;

  EngineOptions options;
  try {
    options.run_dir =
        create_run_directory(a.output_dir.empty() ? workflow->defaults.output_dir : a.output_dir, workflow->name);
  } catch (const std::exception& e) {
    std::cerr << "diagnose check: " << e.what() << "\n";
    return kExitInfrastructure;
  }
  workflow->path = workflow_copy_path(options.run_dir);  // the engine writes `text` there
  if (!a.quiet) std::cerr << "diagnose check: the workflow it runs: " << workflow->path << "\n";
  install_interrupt_handlers();
  return run_to_verdict(*workflow, options, LogFormat::Human, a.quiet ? Verbosity::Quiet : Verbosity::Normal,
                        verdict_output(a.quiet, a.json));
}

}  // namespace

int check_command(int argc, char** argv) {
  CLI::App app{
      "Diagnose a PyTorch script with the standard workflow (graph-mode-precision.yaml), no YAML to write:\n"
      "  diagnose check model.py [--backend B] [--device D] [--dtype T] [-- script args]\n"
      "runs the script unmodified (its torch.compile calls redirected) in eager and graph mode, prints the\n"
      "verdict, and leaves the workflow it ran as <run dir>/workflow.yaml to keep, edit and run again.",
      "diagnose check"};
  Arguments a;
  app.add_option("script", a.script, "the model's script (run as python script [args])")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("args", a.args, "the script's arguments (after --)");
  app.add_option("--backend", a.backend, "torch.compile backend: inductor (default), aot_eager, torchair, module:fn");
  app.add_option("--device", a.device, "cpu (default), cuda, npu...");
  app.add_option("--dtype", a.dtype, "cast the model and its floating inputs: float16, bfloat16, float32...");
  app.add_option("--output-dir", a.output_dir, "where to create the run directory (default: runs)");
  app.add_flag("-q,--quiet", a.quiet, "print only the verdict");
  app.add_flag("--json", a.json, "print the verdict as report.json's verdict object");
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;
  return check(a);
}

}  // namespace diagnose
