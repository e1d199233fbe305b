#include <boost/filesystem.hpp>
#include <cstdlib>

#include "orchestrator/engine/engine.h"
#include "orchestrator/engine/result_lookup.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/workflow/template.h"

namespace diagnose {

namespace fs = boost::filesystem;

StepContext::StepContext(const Workflow& workflow, const StepSpec& step, const State& state, std::string run_dir,
                         RunExecutor executor, const SharedRuns* shared_runs)
    : workflow_(workflow),
      step_(step),
      state_(state),
      run_dir_(std::move(run_dir)),
      executor_(std::move(executor)),
      shared_runs_(shared_runs) {}

std::string StepContext::step_dir() const { return step_dir_of(run_dir_, step_.id); }

std::string StepContext::fingerprint() const { return step_fingerprint(workflow_, step_); }

std::string StepContext::model_python() const { return diagnose::model_python(workflow_); }

std::string model_python(const Workflow& workflow) {
  if (!workflow.model.python.empty()) return workflow.model.python;
  const char* from_env = std::getenv("DIAGNOSE_PYTHON");
  if (from_env && *from_env) return from_env;
  // A wheel's diagnose lies in bin/ beside the Python it was installed into (venv, conda, /usr).
  fs::path beside = fs::path(self_executable()).parent_path() / "python3";
  boost::system::error_code ec;
  return fs::exists(beside, ec) ? beside.string() : "python3";
}

std::string StepContext::run_dir_of(const std::string& run_name) const {
  return run_name == "main" ? step_dir() : step_dir() + "/" + run_name;
}

namespace {

std::optional<std::string> json_text(const nlohmann::json& v) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string joined;
    for (const auto& item : v)
      joined += (joined.empty() ? "" : ",") + (item.is_string() ? item.get<std::string>() : item.dump());
    return joined;
  }
  return v.dump();
}

}  // namespace

std::string StepContext::expand(const std::string& text, const std::string& run_name) const {
  return expand_template(text, [&](const std::string& name) -> std::optional<std::string> {
    if (name == "run_dir") return run_dir_;
    if (name == "workflow_dir") return workflow_.dir;
    if (name == "workflow_name") return workflow_.name;
    if (name == "step.id") return step_.id;
    if (name == "step.dir") return step_dir();
    if (name == "step.dump_dir" || name == "run.dump_dir") return run_dir_of(run_name) + "/dump";
    if (name == "run.name") return run_name;
    if (name == "run.dir") return run_dir_of(run_name);
    if (name.rfind("env.", 0) == 0) {
      const char* value = std::getenv(name.substr(4).c_str());
      return std::string(value ? value : "");
    }
    if (name.rfind("steps.", 0) == 0) {
      std::optional<std::string> value = json_text(result_value(state_, run_dir_, name));
      if (!value)
        throw TemplateError("${" + name +
                                "} has no value: that step was skipped, has not produced it, "
                                "or has several runs (use steps.<id>.runs.<run>.<field>)",
                            0);
      return value;
    }
    return std::nullopt;
  });
}

std::string StepContext::path(const std::string& text, const std::string& run_name) const {
  return absolute_path(expand(text, run_name), workflow_.dir);
}

RunRequest StepContext::model_run(const std::string& run_name, const CommandSpec& own) const {
  const CommandSpec& model = workflow_.model.command;
  RunRequest r;
  r.name = run_name;
  r.dir = run_dir_of(run_name);
  r.dump_dir = r.dir + "/dump";

  std::vector<std::string> argv;
  if (!own.shell.empty()) {
    argv = {"/bin/sh", "-c", own.shell};
  } else if (!own.argv.empty()) {
    argv = own.argv;
  } else if (!workflow_.model.script.empty()) {
    argv = {model_python(), "-m", "diagnose_pytorch", "run", absolute_path(workflow_.model.script, workflow_.dir)};
    argv.insert(argv.end(), model.args.begin(), model.args.end());
    argv.insert(argv.end(), own.args.begin(), own.args.end());
  } else if (!model.shell.empty()) {
    // Extra arguments reach a shell command as "$@".
    std::string script = model.shell;
    if (!own.args.empty()) script += " \"$@\"";
    argv = {"/bin/sh", "-c", script, "sh"};
    argv.insert(argv.end(), own.args.begin(), own.args.end());
  } else {
    argv = model.argv;
    argv.insert(argv.end(), own.args.begin(), own.args.end());
  }
  bool shell_form = !argv.empty() && argv[0] == "/bin/sh" && argv.size() >= 3 && argv[1] == "-c";
  for (size_t i = 0; i < argv.size(); ++i) {
    // The shell's own text is the user's; its templates are expanded like any argument.
    if (shell_form && i < 2) continue;
    argv[i] = expand(argv[i], run_name);
  }
  r.argv = argv;

  std::string cwd = own.cwd ? *own.cwd : (model.cwd ? *model.cwd : ".");
  r.cwd = path(cwd, run_name);
  for (const auto& [key, value] : model.env) r.env[key] = expand(value, run_name);
  for (const auto& [key, value] : own.env) r.env[key] = expand(value, run_name);
  r.env["DIAGNOSE_RUN_DIR"] = run_dir_;
  r.env["DIAGNOSE_STEP"] = step_.id;
  r.env["DIAGNOSE_DUMP_DIR"] = r.dump_dir;

  r.timeout_s = own.timeout_s ? *own.timeout_s : (model.timeout_s ? *model.timeout_s : workflow_.defaults.timeout_s);
  r.retries = own.retries ? *own.retries : (model.retries ? *model.retries : 0);
  for (const std::string& output : own.outputs) {
    r.outputs.push_back(absolute_path(expand(output, run_name), r.cwd));
  }
  return r;
}

}  // namespace diagnose
