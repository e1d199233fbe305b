// A workflow as loaded from its YAML file (docs/workflow.md describes the format).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "compare/judge.h"

namespace diagnose {

// How to start one process. Templates (${...}) are still unexpanded here.
struct CommandSpec {
  std::vector<std::string> argv;  // the whole command line; empty when `shell` or `args` is used
  std::string shell;              // run by /bin/sh -c, only when the user wrote `shell:`
  std::vector<std::string> args;  // appended to the model's command
  std::map<std::string, std::string> env;
  std::optional<std::string> cwd;
  std::optional<double> timeout_s;
  std::optional<int> retries;
  std::vector<std::string> outputs;  // paths that must exist after a successful run
};

struct ModelSpec {
  CommandSpec command;  // argv or shell (or args for a script), cwd, env, timeout, retries
  // A script run through the PyTorch plugin (steps/plugin_runs/plugin_run.h); empty: the command form.
  std::string script;  // relative to the workflow's directory
  std::string python;  // empty: StepContext::model_python's choice
  std::string backend = "inductor";
  std::string device = "cpu";
  std::optional<std::string> dtype;
};

struct Defaults {
  int slots = 1;                    // model runs at the same time
  std::string output_dir = "runs";  // where run directories are created
  double timeout_s = 3600;          // per run, unless the model or step says otherwise
  double kill_grace_s = 5;          // between SIGTERM and SIGKILL
  // Bytes of tensor files the diagnosis's op dumps may keep, split over them (engine/dump_budget.h); 0: no limit.
  int64_t dump_budget = int64_t{1} << 30;
  // defaults.tolerances, in the order written.
  std::vector<compare::ToleranceOverride> tolerance_overrides;
};

enum class OnFailure { Stop, Continue };

// A step's kind-specific keys, parsed and checked once at load by its kind
// (StepKindDeclaration::parse); each kind derives its own.
struct StepOptions {
  virtual ~StepOptions() = default;
};

struct StepSpec {
  std::string id;
  std::string kind;
  std::string when;  // empty: always
  OnFailure on_failure = OnFailure::Stop;
  std::string diagnoses;                       // verdict category when the step fails; empty: the kind's default
  YAML::Node node;                             // the whole step as written: positions for diagnostics, the fingerprint
  std::shared_ptr<const StepOptions> options;  // its kind's keys, parsed at load; null: the kind has none
};

struct VerdictSpec {
  std::vector<std::string> order;             // category priority; empty: the flowchart's order
  std::map<std::string, std::string> advice;  // replaces the built-in advice per category
};

struct ReportSpec {
  std::vector<std::string> formats = {"md", "json", "junit", "html"};
};

struct Workflow {
  std::string path;  // as given on the command line
  std::string dir;   // absolute directory of the file: relative paths start here
  std::string name;
  std::string text;  // the file's bytes, copied into the run directory
  ModelSpec model;
  // The file that wrote `model:`: `path`, or the base's when inherited through `extends:`.
  std::string model_source;
  Defaults defaults;
  std::vector<StepSpec> steps;
  VerdictSpec verdict;
  ReportSpec report;
  YAML::Node root;

  const StepSpec* find_step(const std::string& id) const;
  int step_index(const std::string& id) const;  // -1 when absent
};

}  // namespace diagnose
