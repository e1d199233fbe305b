// The run spec (spec.json, docs/run-spec.md): what the engine asks of one plugin run. The
// engine keeps a spec as the JSON the steps built (absent fields are spec.py's defaults); this
// unit is the only reader of its fields: what of a spec is the run's identity, how two runs'
// needs merge into one run, and what its dump is for the byte budget.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace diagnose {

// What of `spec` decides the run's result: all but output_dir (an empty switches.inductor_off is
// no switch). Two runs with equal identities (and equal commands) compute the same.
nlohmann::json spec_identity_fields(const nlohmann::json& spec);

// What the run computes: its identity without what it observes on the side (dump, checks).
nlohmann::json spec_computation(const nlohmann::json& spec);

// A spec whose dump and checks cover both `a`'s and `b`'s (the rest is `a`'s), or nullopt when
// neither covers the other: same dump level and filters, truth where either wants it, statistics
// only where both do, checks.meta where either wants it, the other checks equal; or a run of final
// outputs only (level none) covered by one whose dump only observes the same computation.
std::optional<nlohmann::json> merged_needs(const nlohmann::json& a, const nlohmann::json& b);

// The dump level a spec asks for, with `auto` resolved as the plugin resolves it
// (plugins/pytorch/README.md, "Dump levels"); also of the spec a run's status.json echoes, which
// lists unset fields as null.
std::string resolved_dump_level(const nlohmann::json& spec);

// Whether the run writes tensor files through the plugin's dump writer (an aten, fx or compiled
// op dump, not statistics only, not TorchAir's own dumps) without a budget of its own.
bool takes_dump_share(const nlohmann::json& spec);

// Gives `spec` the byte budget of its op dump (dump.max_bytes).
void set_dump_max_bytes(nlohmann::json& spec, const nlohmann::json& bytes);

// The fields of a spec the steps read, typed; nullopt where the spec does not say.
struct RunSpecFields {
  std::optional<std::string> mode, backend, device, dtype;
  bool inductor_fallback_random = false;  // switches.inductor.fallback_random is true
};
RunSpecFields run_spec_fields(const nlohmann::json& spec);

// The fields of spec.json as docs/run-spec.md lists them ("dump.level", ...), for its test.
const std::vector<std::string>& run_spec_field_names();

}  // namespace diagnose
