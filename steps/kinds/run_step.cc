// `run`: starts the model (or any command) once, or once per entry of `runs:` in
// parallel, and checks that the declared outputs exist.
#include <boost/filesystem.hpp>

#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"

namespace diagnose {

namespace {

const char* kCommandKeys[] = {"argv", "shell", "args", "env", "cwd", "timeout", "retries", "outputs"};

// The step's own command keys, with one run's keys on top (env is merged).
YAML::Node merged_command(const YAML::Node& step, const YAML::Node& run) {
  YAML::Node merged(YAML::NodeType::Map);
  for (const char* key : kCommandKeys)
    if (step[key]) merged[key] = YAML::Clone(step[key]);
  if (!run) return merged;
  for (const auto& entry : run) {
    std::string key = entry.first.Scalar();
    if (key == "env" && merged["env"]) {
      for (const auto& variable : entry.second) merged["env"][variable.first.Scalar()] = YAML::Clone(variable.second);
    } else {
      if (key == "argv" || key == "shell") {
        merged.remove("argv");
        merged.remove("shell");
        merged.remove("args");
      }
      merged[key] = YAML::Clone(entry.second);
    }
  }
  return merged;
}

class RunStep : public StepKind {
 public:
  RunStep()
      : StepKind("run",
                 "Run the model (or a command) once, or several named runs in parallel; passes when every run "
                 "exits 0 and creates its declared outputs.") {}
  std::vector<Property> parameters() const override {
    std::vector<Property> properties = command_properties();
    properties.push_back(
        optional("runs", map_schema("Named runs executed in parallel; each may override the step's command keys.",
                                    object_schema("One run.", command_properties()))));
    properties.push_back(optional(
        "fail_exit_code",
        integer_schema("An exit status that means 'the check failed' (a finding) rather than 'the run broke'.", 1)));
    return properties;
  }
  std::vector<std::string> result_fields() const override { return {"duration_s"}; }

  void check(const StepSpec& step, const CheckContext&, Diagnostics& diagnostics) const override {
    check_command_form(step.node, "steps." + step.id, false, diagnostics);
    if (YAML::Node runs = step.node["runs"]) {
      for (const auto& run : runs) {
        std::string run_name = run.first.Scalar();
        bool valid = !run_name.empty() &&
                     run_name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
                         std::string::npos;
        if (!valid)
          diagnostics.error(run.first.Mark(), "run name '" + run_name + "' may only hold letters, digits, '_' and '-'");
        check_command_form(run.second, "steps." + step.id + ".runs." + run_name, false, diagnostics);
      }
      if (runs.size() == 0) diagnostics.error(runs.Mark(), "steps." + step.id + ".runs: name at least one run");
    }
  }

  // The step's commands: one per named run, else the step's own.
  struct Options : StepOptions {
    std::vector<std::pair<std::string, CommandSpec>> runs;
    std::optional<int> fail_exit_code;
  };
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext&, Diagnostics&) const override {
    const YAML::Node& node = step.node;
    auto o = std::make_shared<Options>();
    if (YAML::Node runs = node["runs"]) {
      for (const auto& run : runs)
        o->runs.emplace_back(run.first.Scalar(), parse_command(merged_command(node, run.second)));
    } else {
      o->runs.emplace_back("main", parse_command(merged_command(node, YAML::Node())));
    }
    if (YAML::Node code = node["fail_exit_code"]) o->fail_exit_code = code.as<int>();
    return o;
  }

  StepResult evaluate(const StepContext& context) const override {
    const Options& o = context.options<Options>();
    std::vector<RunRequest> requests;
    for (const auto& [name, command] : o.runs) requests.push_back(context.model_run(name, command));
    std::vector<RunRecord> runs = context.run(requests);

    const std::optional<int>& fail_exit_code = o.fail_exit_code;
    std::optional<StepResult> error = error_from_runs(runs);
    StepResult result = error ? *error : StepResult{};
    double duration = 0;
    for (const RunRecord& run : runs) {
      duration = std::max(duration, run.finished - run.started);
      result.reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
      if (boost::filesystem::exists(run.dump_dir) && !boost::filesystem::is_empty(run.dump_dir))
        result.evidence.push_back({"file", run.name + " dump", run.dump_dir, nullptr});
      result.evidence.push_back({"file", run.name + " stdout", run.stdout_path, nullptr});
      result.evidence.push_back({"file", run.name + " stderr", run.stderr_path, nullptr});
    }
    result.metrics["duration_s"] = duration;
    if (!error) {
      result.status = StepStatus::Pass;
      result.summary =
          runs.size() == 1 ? "the run succeeded" : "all " + std::to_string(runs.size()) + " runs succeeded";
      return result;
    }
    bool only_check_failures = fail_exit_code.has_value();
    for (const RunRecord& run : runs)
      if (run.status != RunStatus::Succeeded && !(run.status == RunStatus::Failed && run.exit_code == fail_exit_code))
        only_check_failures = false;
    if (only_check_failures) {
      result.status = StepStatus::Fail;
      result.summary = "the check failed (exit status " + std::to_string(*fail_exit_code) + ")";
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<StepKind> make_run_step() { return std::make_unique<RunStep>(); }

}  // namespace diagnose
