// The run spec (spec.json, docs/run-spec.md): what the engine asks of one plugin run, typed. The
// steps build a RunSpec; to_json below is the only writer of spec.json's fields and from_json
// their only reader. A field left unset is absent from spec.json and takes the plugin's default
// (plugins/pytorch/diagnose_pytorch/spec.py). This unit also says what of a spec is the run's
// identity, how two runs' needs merge into one run, and what its dump is for the byte budget.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace diagnose {

// What the run dumps (spec.json `dump`).
struct DumpRequest {
  std::optional<std::string> level;  // none, aten, fx, compiled or auto (resolved_dump_level)
  std::optional<bool> ops, modules, final, stats_only, truth;
  // op records at module boundaries only: the values a module hands to code outside it
  std::optional<bool> boundaries;
  std::optional<std::vector<std::string>> io, include, exclude, tensor_io;
  std::optional<std::vector<int64_t>> steps;
  std::optional<int64_t> max_bytes;
};

// What is switched for the run (spec.json `switches`).
struct RunSwitches {
  std::optional<nlohmann::json> inductor;  // torch._inductor.config overrides, an object
  std::optional<std::vector<std::string>> inductor_off;
  std::optional<nlohmann::json> torchair;  // TorchAir CompilerConfig fields by dotted path, an object
  std::optional<std::string> fusion_switch_file;
};

// Checks made on the side of the run (spec.json `checks`).
struct RunChecks {
  std::optional<bool> meta;
};

// Subgraph isolation (spec.json `isolation`): the nodes run eagerly, the others compiled.
struct RunIsolation {
  std::vector<std::string> eager_nodes;
  std::optional<bool> repro;
  // state paths (buffers.k_cache): the nodes that write them in place run eagerly too
  std::optional<std::vector<std::string>> eager_writes;
  // eager nodes whose value each call records (observed/<id>/<step>.npy)
  std::optional<std::vector<std::string>> observe;
};

struct RunSpec {
  std::optional<int64_t> version;
  std::optional<std::string> output_dir, mode, backend, device, dtype, autocast;
  std::optional<bool> dynamic, fullgraph, deterministic;
  std::optional<int64_t> seed;
  std::optional<RunSwitches> switches;
  std::optional<DumpRequest> dump;
  std::optional<RunChecks> checks;
  std::optional<RunIsolation> isolation;

  // The dump, set (empty) where it was not.
  DumpRequest& dump_request() { return dump ? *dump : dump.emplace(); }
  RunSwitches& run_switches() { return switches ? *switches : switches.emplace(); }
};

// A spec of `mode` (eager or compiled) with a dump at `level`: the steps' defaults for a run.
DumpRequest dump_at(std::string level);
RunSpec spec_of(std::string mode, DumpRequest dump);

// spec.json's fields: the set ones only. from_json reads what to_json writes, a step side's
// overrides and the spec a run's status.json echoes (its null fields read as unset); it throws
// std::invalid_argument naming a field that is unknown or of the wrong type.
void to_json(nlohmann::json& json, const RunSpec& spec);
void from_json(const nlohmann::json& json, RunSpec& spec);
void to_json(nlohmann::json& json, const RunSwitches& switches);
void from_json(const nlohmann::json& json, RunSwitches& switches);
void to_json(nlohmann::json& json, const DumpRequest& dump);
void from_json(const nlohmann::json& json, DumpRequest& dump);
void to_json(nlohmann::json& json, const RunChecks& checks);
void from_json(const nlohmann::json& json, RunChecks& checks);
void to_json(nlohmann::json& json, const RunIsolation& isolation);
void from_json(const nlohmann::json& json, RunIsolation& isolation);
// The spec a run's status.json echoes (its null fields unset); nullopt when it is none (the
// single-op check's header, another plugin version's).
std::optional<RunSpec> echoed_run_spec(const nlohmann::json& echo);
bool operator==(const RunSpec& a, const RunSpec& b);
inline bool operator!=(const RunSpec& a, const RunSpec& b) { return !(a == b); }

// spec.json in `run_dir`, and its text.
std::string run_spec_path(const std::string& run_dir);
std::string run_spec_text(const RunSpec& spec);
// The spec.json in `run_dir`; nullopt when it is missing or no run spec.
std::optional<RunSpec> read_run_spec(const std::string& run_dir);

// `base` with what `over` sets, later winning: switches, dump and checks merged field by field,
// switches.inductor and switches.torchair key by key (a JSON merge patch).
RunSpec overlaid(const RunSpec& base, const RunSpec& over);
// A change to a spec, as a step's side writes it: each field kept, set, or reset to the plugin's
// default (null). A part set (switches, dump, checks, isolation) changes field by field,
// switches.inductor and switches.torchair key by key (a JSON merge patch: a null removes a key);
// any other field set replaces the spec's. The fields are RunSpec's, listed once (run_spec.cc).
struct RunSpecPatch {
  RunSpec set;                  // the fields set; a part given is set, even with none of its fields
  std::set<std::string> reset;  // the fields reset, by dotted path: dtype, dump.io
};

// A member of a side that no patch can hold, by path ({"checks", "meta"}).
struct RunSpecPatchError {
  std::vector<std::string> path;
  std::string message;
};

// The spec's fields among `side`'s members (its other members, args, env..., say how the process
// runs) as a patch; a member of the wrong type, or a part's unknown key, is left out and goes to
// `errors`.
RunSpecPatch run_spec_patch(const nlohmann::json& side, std::vector<RunSpecPatchError>& errors);
// `base` as `patch` changes it.
RunSpec patched(RunSpec base, const RunSpecPatch& patch);

// What of `spec` decides the run's result: all but output_dir (an empty switches.inductor_off is
// no switch). Two runs with equal identities (and equal commands) compute the same.
nlohmann::json spec_identity_fields(const RunSpec& spec);

// What the run computes: the spec without what it observes on the side (dump, checks).
RunSpec spec_computation(RunSpec spec);

// A spec whose dump and checks cover both `a`'s and `b`'s (the rest is `a`'s), or nullopt when
// neither covers the other: same dump level and filters, truth where either wants it, statistics
// only where both do, checks.meta where either wants it; or a run of final outputs only (level
// none) covered by one whose dump only observes the same computation.
std::optional<RunSpec> merged_needs(const RunSpec& a, const RunSpec& b);

// The dump level a spec asks for, with `auto` resolved as the plugin resolves it
// (plugins/pytorch/README.md, "Dump levels"; tests/vectors/dump_levels.json holds both sides to
// the same cases).
std::string resolved_dump_level(const RunSpec& spec);

// Whether the run writes tensor files through the plugin's dump writer (an aten, fx or compiled
// op dump, not statistics only, not TorchAir's own dumps) without a budget of its own.
bool takes_dump_share(const RunSpec& spec);

// The fields of a spec the steps read, typed; nullopt where the spec does not say. Read from the
// spec a run's status.json echoes, whatever its content (never throws).
struct RunSpecFields {
  std::optional<std::string> mode, backend, device, dtype;
  bool inductor_fallback_random = false;  // switches.inductor.fallback_random is true
};
RunSpecFields run_spec_fields(const nlohmann::json& spec);
RunSpecFields run_spec_fields(const RunSpec& spec);

}  // namespace diagnose
