// Runs of the model through the PyTorch plugin, for the diagnostic step kinds.
//
// A workflow whose `model:` has `script:` runs it as
//   <python> -m diagnose_pytorch run <script> <model args> <side args>
// with DIAGNOSE_RUN_SPEC=<run dir>/spec.json, the run spec of plugins/pytorch/README.md.
// A step builds the spec of each run from three layers, later ones winning (objects such
// as `switches` and `dump` are merged key by key):
//   1. the model: backend, device, dtype;
//   2. the step kind's defaults for that run (e.g. spec_of("eager", dump_at("aten")));
//   3. the side as the user wrote it in the step (golden:, target:, referee: ...): any of
//      mode, backend, device, dtype, autocast, dynamic, fullgraph, seed, deterministic,
//      switches, dump, checks, plus the command keys args (appended to the model's), env,
//      cwd, timeout, retries.
// The side reaches evaluate parsed at load (side.h). Typical use inside StepKind::evaluate:
//   RunSpec spec = side_spec(context, o.target.run, spec_of("compiled", dump_at("none")));
//   RunRequest run = plugin_run(context, "target", spec, o.target.run);
//   std::vector<RunRecord> records = context.run({run});
//   // run.dump_dir holds the dump, plugin_status_path(run) the plugin's status.json.
#pragma once

#include "steps/layer.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/step.h"
#include "orchestrator/workflow/schema.h"
#include "runspec/plugin_status.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

// An eager run dumping every ATen op: the run single_op, eager_device, dynamo and known_causes
// share on a model (shared_runs.h).
extern const RunSpec kEagerAtenRun;

// The keys a side may hold (for a step kind's parameters()).
std::vector<Property> plugin_side_properties();
// A side mapping: `description` plus plugin_side_properties().
Schema plugin_side_schema(const std::string& description);

// The run spec of one side: model defaults, then `defaults`, then the side's overrides
// (std::invalid_argument when its keys are no run spec's). Relative paths in
// switches.fusion_switch_file are made absolute against the workflow's directory. output_dir is left for plugin_run.
RunSpec side_spec(const StepContext& context, const RunOverrides& side, const RunSpec& defaults);

// Shareable: another request of this invocation with the same identity may be this run (or this
// run that one); OwnRun: a run of its own whatever its identity (a request the step changes after
// plugin_run in a way that changes its identity).
enum class Sharing { Shareable, OwnRun };

// The request for one run of the model's script: the run directory is
// context.run_dir_of(run_name), or a shared run's (orchestrator/engine/shared_runs.h, whose
// merged dump needs then replace spec's); spec.output_dir is set to it and spec.json written
// there (directories created), dump.max_bytes set to the diagnosis's share (dump_budget.h).
// The side's args/env/cwd/timeout/retries apply. The dump lands
// in request.dump_dir (<run dir>/dump); a request whose working directory is its run directory
// keeps working in the shared run's. `repeat`: the earlier runs of this configuration the step
// asked for (RunRequest::repeat); a repeat never forks from the warm process. Throws
// std::runtime_error when the model has no `script` (the step's result is then an error saying so).
RunRequest plugin_run(const StepContext& context, const std::string& run_name, RunSpec spec, const RunOverrides& side,
                      int repeat = 0, Sharing sharing = Sharing::Shareable);

// `original` made again as a run of its own named `run_name`, in its own directory, with `spec`
// (the original's spec.json, changed by the caller): the same command and environment, and its
// own directory as working directory where the original worked in its own. Never shared.
RunRequest rerun_with_spec(const StepContext& context, const RunRequest& original, const std::string& run_name,
                           RunSpec spec);

// `side` with the run's own directory as its working directory (GE writes fusion_result.json
// there): runs made so are the same run wherever each one's directory is (shared_runs.h).
RunOverrides in_own_directory(RunOverrides side);

// Whether a compiled run of `spec` may write files into its working directory: TorchAir's GE
// writes fusion_result.json there, and a user backend (module:function) may.
bool writes_into_cwd(const RunSpec& spec);
// Whether a compiled run of `spec` works in its run's own directory: where writes_into_cwd(spec)
// and neither the side nor the model names a working directory (two such runs at once must not
// write the same files).
bool works_in_own_directory(const StepContext& context, const RunOverrides& side, const RunSpec& spec);
// The side of a compiled run that others may share (graph_dump_compare's target, known_causes'
// experiments): in its own directory where works_in_own_directory, else in the model's, where a
// script finds what it reads.
RunOverrides compiled_side(const StepContext& context, const RunOverrides& side, const RunSpec& spec);

// What plugin_run would ask for, for StepKind::planned_runs: nothing written, nothing shared yet.
PlannedRun planned_plugin_run(const StepContext& context, const std::string& run_name, RunSpec spec,
                              const RunOverrides& side, int repeat = 0);

// The run spec's `switches` as the file `single-op --switches` reads, <dir>/switches.json (a
// search's trial, a workaround); returns its path.
std::string write_switches_file(const std::string& dir, const RunSwitches& switches);

// The plugin's status.json of a run (read it with runspec/plugin_status.h's read_plugin_status).
std::string plugin_status_path(const RunRequest& run);

// Another command of the plugin (`ops`, `single-op`...): <python> -m diagnose_pytorch args,
// in the model's cwd with the model's env, in the run directory of `run_name`. A command that
// sets up from a run of the script (single-op runs it to its first compiled call) gets that
// run's side's env too, as the script had it there.
RunRequest plugin_command(const StepContext& context, const std::string& run_name, const std::vector<std::string>& args,
                          const RunOverrides& side = {});

}  // namespace diagnose
