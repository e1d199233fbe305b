// A side of a comparison as a step's key gives it (golden:, target:, referee:, eager: ...),
// parsed once at load (StepKindDeclaration::parse): the path of a dump made elsewhere, or a run
// of the model with the side's overrides. The step kinds' options hold sides; evaluate() builds
// each run from them (plugin_run.h side_spec and plugin_run), never from the step's YAML.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/workflow.h"
#include "runspec/run_spec.h"

namespace diagnose {

// A side's overrides of a run of the model, as schema-checked and typed at load.
struct RunOverrides {
  // The side's run spec fields (mode, backend, dump, switches...): how they change the kind's
  // defaults for the run (side_spec); empty: not at all.
  RunSpecPatch spec;
  // How the process runs: args, env, cwd, timeout, retries; argv, shell and outputs too for a
  // run of a command model.
  CommandSpec command;
  // A run of a command model: where it leaves its dump, as written.
  std::optional<std::string> dump_path;

  // `node` a mapping of the side's keys, or undefined: no overrides. A spec field the patch cannot
  // hold (checks: {meta: 3}) goes to `diagnostics` with its position.
  static RunOverrides parse(const YAML::Node& node, Diagnostics& diagnostics);
};

struct Side {
  bool given = false;               // the step has the key
  std::optional<std::string> path;  // a dump's path as written; StepContext::path expands it
  RunOverrides run;                 // otherwise: the run's overrides

  // `node` a scalar (a dump's path), a mapping (run overrides) or undefined (not given).
  static Side parse(const YAML::Node& node, Diagnostics& diagnostics);
};

}  // namespace diagnose
