#include "steps/plugin_runs/plugin_run.h"

#include <boost/filesystem.hpp>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "orchestrator/engine/digest.h"
#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/shared_runs.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/util/files.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;

const char* kPluginRunKeys[] = {"args", "env", "cwd", "timeout", "retries"};

// What of a side's command applies to a run of the model's script: kPluginRunKeys.
CommandSpec plugin_run_command(CommandSpec side) {
  side.argv.clear();
  side.shell.clear();
  side.outputs.clear();
  return side;
}

const std::vector<std::string> kDtypes = {"float32", "float64", "float16", "bfloat16"};

// spec.json of the run in its directory (created), with output_dir set to it, and the
// variables that hand it to the plugin.
void write_run_spec(RunRequest& request, RunSpec spec) {
  spec.output_dir = request.dir;
  std::string text = run_spec_text(spec);
  fs::create_directories(request.dir);
  std::string path = run_spec_path(request.dir);
  write_file_atomically(path, text);
  request.env["DIAGNOSE_RUN_SPEC"] = path;
  request.env["DIAGNOSE_RUN_SPEC_DIGEST"] = hex_digest(fnv1a(text));  // --resume reruns a changed spec
}

}  // namespace

RunOverrides in_own_directory(RunOverrides side) {
  side.command.cwd = "${run.dir}";
  return side;
}

bool writes_into_cwd(const RunSpec& spec) {
  const std::string backend = spec.backend.value_or("");
  return backend == "torchair" || backend.find(':') != std::string::npos;
}

bool works_in_own_directory(const StepContext& context, const RunOverrides& side, const RunSpec& spec) {
  return writes_into_cwd(spec) && !side.command.cwd && !context.workflow().model.command.cwd;
}

RunOverrides compiled_side(const StepContext& context, const RunOverrides& side, const RunSpec& spec) {
  return works_in_own_directory(context, side, spec) ? in_own_directory(side) : side;
}

const RunSpec kEagerAtenRun = spec_of("eager", dump_at("aten"));

std::vector<Property> plugin_side_properties() {
  Schema switches = object_schema(
      "Graph-mode switches of the run.",
      {optional("inductor", map_schema("torch._inductor.config overrides.", any_schema("value"))),
       optional("fusion_switch_file",
                string_schema("GE fusion switch file (TorchAir), relative to the workflow file.")),
       optional("inductor_off", array_schema("Named Inductor rules turned off (plugins/pytorch inductor_rules).",
                                             string_schema("rule"))),
       optional("torchair", map_schema("TorchAir CompilerConfig fields by dotted path.", any_schema("value")))});
  Schema dump = object_schema(
      "What the run dumps (plugins/pytorch/README.md).",
      {optional("level", string_schema("Dump level.", {"auto", "none", "aten", "fx", "compiled"})),
       optional("ops", boolean_schema("op records")), optional("modules", boolean_schema("module records")),
       optional("final", boolean_schema("final output records")),
       optional("io", array_schema("sides of each op", string_schema("side", {"input", "output"}))),
       optional("include", array_schema("regular expressions a record must match", plain_string_schema("regex"))),
       optional("exclude", array_schema("regular expressions a record must not match", plain_string_schema("regex"))),
       optional("steps", array_schema("steps (tokens) to dump", integer_schema("step", 0))),
       optional("stats_only", boolean_schema("statistics only, no tensor files")),
       optional("tensor_io",
                array_schema("sides whose records keep tensor files", string_schema("side", {"input", "output"}))),
       optional("truth", boolean_schema("each record's float64 truth, by shadow execution (docs/dump-format.md)")),
       optional("boundaries", boolean_schema("op records at module boundaries only (docs/run-spec.md)")),
       optional("max_bytes", integer_schema("byte budget for tensor files", 0))});
  std::vector<Property> properties = {
      optional("mode", string_schema("eager or compiled (torch.compile).", {"eager", "compiled"})),
      optional("backend", string_schema("torch.compile backend of this run.")),
      optional("device", string_schema("Device of this run (cpu, cuda, npu...).")),
      optional("dtype", string_schema("Cast the model and its floating inputs.", kDtypes)),
      optional("autocast", string_schema("Run under torch.autocast with this dtype.", kDtypes)),
      optional("dynamic", boolean_schema("torch.compile dynamic=")),
      optional("fullgraph", boolean_schema("torch.compile fullgraph=")),
      optional("seed", integer_schema("Seed set before the script runs.")),
      optional("deterministic", boolean_schema("torch.use_deterministic_algorithms(True)")),
      optional("switches", switches),
      optional("dump", dump),
      optional("checks", map_schema("Extra checks of the plugin ({meta: true}).", any_schema("value"))),
  };
  for (Property& p : command_properties())
    for (const char* key : kPluginRunKeys)
      if (p.name == key) properties.push_back(p);
  return properties;
}

Schema plugin_side_schema(const std::string& description) {
  return object_schema(description, plugin_side_properties());
}

RunSpec side_spec(const StepContext& context, const RunOverrides& side, const RunSpec& defaults) {
  const ModelSpec& model = context.workflow().model;
  RunSpec spec;
  spec.backend = model.backend;
  spec.device = model.device;
  spec.dtype = model.dtype;
  spec = overlaid(std::move(spec), defaults);
  spec = patched(std::move(spec), side.spec);
  if (spec.switches && spec.switches->fusion_switch_file)
    spec.switches->fusion_switch_file = context.path(*spec.switches->fusion_switch_file);
  return spec;
}

PlannedRun planned_plugin_run(const StepContext& context, const std::string& run_name, RunSpec spec,
                              const RunOverrides& side, int repeat) {
  if (context.workflow().model.script.empty())
    throw std::runtime_error("steps of kind " + context.step().kind +
                             " run the model through the PyTorch plugin: give model.script (and args) "
                             "instead of argv/shell");
  RunRequest request = context.model_run(run_name, plugin_run_command(side.command));
  request.repeat = repeat;
  if (repeat > 0) request.never_forked = kRepeatNeverForked;
  return {context.step().id, run_name, std::move(spec), std::move(request)};
}

RunRequest plugin_run(const StepContext& context, const std::string& run_name, RunSpec spec, const RunOverrides& side,
                      int repeat, Sharing sharing) {
  PlannedRun planned = planned_plugin_run(context, run_name, std::move(spec), side, repeat);
  RunRequest request = planned.request;
  const SharedRuns* shared = sharing == Sharing::Shareable ? context.shared_runs() : nullptr;
  if (shared) planned.spec = shared->spec_for(planned);
  if (sharing == Sharing::Shareable) request.spec_identity = spec_identity(planned.spec);
  if (std::optional<std::string> dir = shared ? shared->dir_for(run_identity(request)) : std::nullopt) {
    if (request.cwd == request.dir) request.cwd = *dir;
    request.dir = *dir;
    request.dump_dir = request.env["DIAGNOSE_DUMP_DIR"] = *dir + "/dump";
  }
  apply_dump_share(context.state(), planned.spec);  // like output_dir, not part of the identity
  write_run_spec(request, std::move(planned.spec));
  return request;
}

RunRequest rerun_with_spec(const StepContext& context, const RunRequest& original, const std::string& run_name,
                           RunSpec spec) {
  RunRequest request = original;
  request.name = run_name;
  request.dir = context.run_dir_of(run_name);
  if (original.cwd == original.dir) request.cwd = request.dir;
  request.dump_dir = request.env["DIAGNOSE_DUMP_DIR"] = request.dir + "/dump";
  request.spec_identity.clear();
  request.repeat = 0;
  request.never_forked.clear();
  write_run_spec(request, std::move(spec));
  return request;
}

RunRequest plugin_command(const StepContext& context, const std::string& run_name, const std::vector<std::string>& args,
                          const RunOverrides& side) {
  CommandSpec command;
  command.env = side.command.env;
  std::vector<std::string> argv = {context.model_python(), "-m", "diagnose_pytorch"};
  argv.insert(argv.end(), args.begin(), args.end());
  command.argv = argv;
  RunRequest request = context.model_run(run_name, command);
  request.argv = argv;  // model_run expands templates; these arguments are literal
  return request;
}

std::string write_switches_file(const std::string& dir, const RunSwitches& switches) {
  fs::create_directories(dir);
  const std::string path = dir + "/switches.json";
  write_file_atomically(path, nlohmann::json(switches).dump(2) + "\n");
  return path;
}

std::string plugin_status_path(const RunRequest& run) { return plugin_status_path(run.dir); }

}  // namespace diagnose
