#include "orchestrator/workflow/runner_section.h"

#include <algorithm>

#include "orchestrator/util/paths.h"

namespace diagnose {

Schema runner_schema() {
  return object_schema(
      "Where the model runs execute: on this machine (local) or as Slurm batch jobs (slurm). A step's own "
      "`runner` overrides these keys for that step; --runner and --partition override both.",
      {optional("kind", string_schema("local (default): processes of this machine; slurm: one sbatch job per run.",
                                      {"local", "slurm"})),
       optional("partition", plain_string_schema("Slurm partition (sbatch --partition).")),
       optional("account", plain_string_schema("Slurm account (sbatch --account).")),
       optional("qos", plain_string_schema("Slurm quality of service (sbatch --qos).")),
       optional("time_limit", plain_string_schema("Slurm time limit as sbatch --time takes it (minutes, "
                                                  "[days-]hours:minutes:seconds...). Default: the run's "
                                                  "timeout rounded up to whole minutes.")),
       optional("nodes", integer_schema("Nodes per job (sbatch --nodes).", 1)),
       optional("ranks", integer_schema("Processes per run, one per rank, each with RANK, WORLD_SIZE and "
                                        "LOCAL_RANK: on this machine as torchrun --nproc_per_node starts them "
                                        "(also LOCAL_WORLD_SIZE, MASTER_ADDR 127.0.0.1 and a free MASTER_PORT per "
                                        "run), on Slurm with srun --ntasks. A run succeeds when every rank does.",
                                        1)),
       optional("gpus", plain_string_schema("GPUs per job (sbatch --gpus), e.g. 8 or a100:8.")),
       optional("gres", plain_string_schema("Generic resources per node (sbatch --gres), e.g. gpu:8.")),
       optional("extra_args", array_schema("More sbatch options, each one argument, e.g. --mem=64G.",
                                           plain_string_schema("one sbatch argument"))),
       optional("max_jobs", integer_schema("Jobs queued or running at the same time. Default: defaults.slots.", 1)),
       optional("shared_dir", plain_string_schema("A directory the compute nodes see under the same path; the "
                                                  "run directory must lie inside it.")),
       optional("poll_interval", number_schema("Seconds between squeue polls (default 2).", 0, true)),
       optional("warm", boolean_schema("Local runner: fork each run of the model's script from a Python process "
                                       "that imported torch and the plugin once, instead of starting a process "
                                       "(default true; docs/workflow.md). Other commands, and the slurm "
                                       "runner, start processes."))});
}

namespace {

void apply_section(const YAML::Node& node, RunnerSpec& spec) {
  if (!node || !node.IsMap()) return;
  auto text = [&](const char* key, std::string& field) {
    if (node[key]) {
      field = node[key].Scalar();
      spec.marks[key] = node[key].Mark();
    }
  };
  text("kind", spec.kind);
  text("partition", spec.partition);
  text("account", spec.account);
  text("qos", spec.qos);
  text("time_limit", spec.time_limit);
  text("gpus", spec.gpus);
  text("gres", spec.gres);
  text("shared_dir", spec.shared_dir);
  for (const char* key : {"nodes", "ranks", "max_jobs"}) {
    if (!node[key]) continue;
    int value = node[key].as<int>();
    if (std::string(key) == "nodes")
      spec.nodes = value;
    else if (std::string(key) == "ranks")
      spec.ranks = value;
    else
      spec.max_jobs = value;
    spec.marks[key] = node[key].Mark();
  }
  if (node["poll_interval"]) {
    spec.poll_interval_s = node["poll_interval"].as<double>();
    spec.marks["poll_interval"] = node["poll_interval"].Mark();
  }
  if (node["warm"]) {
    spec.warm = node["warm"].as<bool>();
    spec.marks["warm"] = node["warm"].Mark();
  }
  if (node["extra_args"]) {
    spec.extra_args.clear();
    for (const YAML::Node& arg : node["extra_args"]) spec.extra_args.push_back(arg.Scalar());
    spec.marks["extra_args"] = node["extra_args"].Mark();
  }
}

// [days-]hours:minutes:seconds and its shorter forms, as sbatch --time reads them.
bool slurm_time_text(const std::string& text) {
  if (text == "UNLIMITED" || text == "INFINITE") return true;
  std::string rest = text;
  size_t dash = rest.find('-');
  if (dash != std::string::npos) {
    std::string days = rest.substr(0, dash);
    if (days.empty() || days.find_first_not_of("0123456789") != std::string::npos) return false;
    rest = rest.substr(dash + 1);
  }
  int fields = 0;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    std::string field = rest.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos) return false;
    ++fields;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return fields <= 3;
}

}  // namespace

RunnerSpec runner_for_step(const Workflow& workflow, const StepSpec& step, const RunnerOverride& override) {
  RunnerSpec spec;
  apply_section(workflow.root["runner"], spec);
  apply_section(step.node["runner"], spec);
  if (!override.kind.empty()) {
    spec.kind = override.kind;
    spec.marks.erase("kind");
  }
  if (!override.partition.empty()) {
    spec.partition = override.partition;
    spec.marks.erase("partition");
  }
  if (!spec.shared_dir.empty()) spec.shared_dir = absolute_path(spec.shared_dir, workflow.dir);
  return spec;
}

void check_runner_section(const YAML::Node& node, const std::string& where, Diagnostics& diagnostics) {
  if (!node || !node.IsMap()) return;
  if (YAML::Node limit = node["time_limit"]; limit && limit.IsScalar() && !slurm_time_text(limit.Scalar()))
    diagnostics.error(limit.Mark(), where + ".time_limit: '" + limit.Scalar() +
                                        "' is not a Slurm time (minutes, hours:minutes:seconds, "
                                        "days-hours[:minutes[:seconds]] or UNLIMITED)");
  if (YAML::Node shared = node["shared_dir"]; shared && shared.IsScalar() && shared.Scalar().empty())
    diagnostics.error(shared.Mark(), where + ".shared_dir: name a directory");
}

}  // namespace diagnose
