// The run status (status.json, docs/run-spec.md): what one plugin run did, written by the plugin
// (plugins/pytorch/diagnose_pytorch/status.py) and parsed here once into what the engine and the
// steps read. A field may be missing or of any type (a killed run, another plugin version):
// parsing never throws, and what is not there reads as empty.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runspec/run_spec.h"

namespace diagnose {

// A plugin feature the run probed on its torch (status.json `features`).
struct ProbedFeature {
  bool unavailable = false;  // probed and found missing (`available: false`)
  std::string reason, without;
};

// A module in training mode with active dropout (configuration.active_dropout).
struct ActiveDropout {
  std::string module;
  nlohmann::json p;  // its probability as the plugin wrote it
};

// How the script set torch up when it compiled (status.json `configuration`).
struct RunConfiguration {
  std::optional<bool> cuda_matmul_allow_tf32, cudnn_allow_tf32, deterministic_algorithms;
  std::optional<std::string> float32_matmul_precision;
  std::vector<ActiveDropout> active_dropout;
};

// How the run ran (status.json `ran`), as the plugin wrote each (null when absent).
struct RanFacts {
  nlohmann::json mode, backend, device, dtype;
};

// What Dynamo counted (status.json `graphs`), and the size of the values the compiled graphs'
// nodes compute in one call each (value_bytes, value_elements: what an op-by-op dump keeps).
struct CompileCounts {
  std::optional<int64_t> graph_breaks, recompiles;
  std::vector<std::string> graph_break_reasons, recompile_reasons;
  std::optional<int64_t> value_bytes, value_elements;
};

// A node of an isolation run (status.json isolation.nodes).
struct IsolatedNode {
  std::string id, op, module, source;
};

// What the op dump wrote (status.json `dump`).
struct DumpOutcome {
  bool written = false;  // the status has a dump section
  int64_t written_bytes = 0;
  bool budget_reached = false;
  int64_t records_over_budget = 0;  // not_kept.budget: records kept as statistics only
};

// An Inductor rule a fusion bisection can turn off (status.json inductor_rules.rules): the config
// key and its eager-like setting; a user's own pass (its slot's config key) also has its gate, the
// Inductor rule whose switch skips it too, and the qualified name of the pass the slot held
// (inductor_rules.user_passes; "" when the slot held none).
struct InductorRule {
  std::string config;
  nlohmann::json off_value;
  std::string gate, user_pass;
};

struct PluginStatus {
  bool written = false;  // a status.json object was read
  nlohmann::json spec;   // the run spec as the run echoes it (null when absent)
  RunSpecFields spec_fields;
  std::vector<std::string> argv;  // the process's sys.argv (a non-string item reads as "")
  std::optional<std::string> torch_version;
  std::map<std::string, ProbedFeature> features;
  RunConfiguration configuration;
  CompileCounts graphs;
  RanFacts ran;
  nlohmann::json active_switches;   // switches.active: the switches in force (null when absent)
  nlohmann::json torchair_options;  // switches.active.torchair: the TorchAir options applied (null when none)
  std::vector<IsolatedNode> isolated_nodes;
  DumpOutcome dump;
  std::map<std::string, InductorRule> inductor_rules;
  std::optional<size_t>
      compile_calls;  // the torch.compile calls the script made (compile_calls); nullopt: not recorded

  // Whether the run ran the model's script (`python -m diagnose_pytorch run ...`).
  bool ran_script() const { return argv.size() >= 2 && argv[1] == "run"; }
  // The byte budget the run's op dump had (its spec's dump.max_bytes; null when none).
  nlohmann::json dump_max_bytes() const;
};

PluginStatus parse_plugin_status(const nlohmann::json& status);
// The status of the run in `run_dir` (rank 0's status.json; rank R > 0's status_rank{R}.json);
// empty (written false) when missing or unreadable.
PluginStatus read_plugin_status(const std::string& run_dir, int rank = 0);
// The path of a run's status (rank 0's status.json; rank R > 0's status_rank{R}.json).
std::string plugin_status_path(const std::string& run_dir, int rank = 0);

// Whether a JSON document is a run status (its `format`), as a fired-rule report may also be
// GE's fusion_result.json.
bool is_plugin_status(const nlohmann::json& doc);
// The fired-rule report a run status holds, for a bisection: the nodes an isolation run compiled
// (isolation.compiled), else the Inductor switches that took effect (inductor_rules.fired);
// nullopt when it has neither. Throws std::runtime_error naming `path` and the field when that
// field is not a list of strings.
std::optional<std::vector<std::string>> fired_rules_in_status(const nlohmann::json& status, const std::string& path);

}  // namespace diagnose
