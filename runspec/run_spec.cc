#include "runspec/run_spec.h"

#include "runspec/json_member.h"

namespace diagnose {

namespace {

nlohmann::json without(nlohmann::json object, std::initializer_list<const char*> keys) {
  if (!object.is_object()) return object;
  for (const char* key : keys) object.erase(key);
  return object;
}

bool wants(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key] == true;
}

std::string dump_level(const nlohmann::json& spec) {
  nlohmann::json dump = spec.value("dump", nlohmann::json::object());
  return dump.is_object() ? dump.value("level", "auto") : "auto";
}

// Whether `spec`'s dump only observes what the run computes, so that its final outputs are those
// of the same run dumping nothing: eager ATen ops through a dispatch mode (`auto` resolved as the
// plugin does). Inductor's buffer dump compiles anew, its FX graph cache off, which can compute
// something else than the run as the user runs it (pytorch/pytorch#185382: a wrong cache hit);
// an FX-level dump replaces the backend; TorchAir's GE dump is GE's own.
bool observes_only(const nlohmann::json& spec) {
  if (spec.contains("isolation")) return false;
  return spec.value("mode", "") == "eager" && resolved_dump_level(spec) == "aten";
}

// `outputs_only` (dump level none) is covered by `dumping` when `dumping`'s dump only observes and
// holds each truth `outputs_only` asks for.
bool covers_outputs(const nlohmann::json& dumping, const nlohmann::json& outputs_only) {
  nlohmann::json dump = outputs_only.value("dump", nlohmann::json::object());
  nlohmann::json dumping_dump = dumping.value("dump", nlohmann::json::object());
  // The final outputs are written whatever the op dump's filters and budget, but not with
  // `final: false`, and their truth only on the steps the dump shadows.
  bool same_outputs = dumping_dump.value("final", true) == dump.value("final", true) &&
                      dumping_dump.value("steps", nlohmann::json()) == dump.value("steps", nlohmann::json());
  return dump_level(outputs_only) == "none" && dump_level(dumping) != "none" && observes_only(dumping) &&
         same_outputs && (!wants(dump, "truth") || wants(dumping_dump, "truth")) &&
         outputs_only.value("checks", nlohmann::json::object()) == nlohmann::json::object();
}

std::optional<std::string> text(const nlohmann::json& spec, const char* key) {
  const nlohmann::json& value = json_member(spec, key);
  return value.is_string() ? std::optional<std::string>(value.get<std::string>()) : std::nullopt;
}

}  // namespace

nlohmann::json spec_identity_fields(const nlohmann::json& spec) {
  nlohmann::json normal = without(spec, {"output_dir"});
  if (normal.contains("switches") && normal["switches"].is_object()) {
    nlohmann::json& switches = normal["switches"];
    if (switches.contains("inductor_off") && switches["inductor_off"].empty()) switches.erase("inductor_off");
    if (switches.empty()) normal.erase("switches");
  }
  return normal;
}

nlohmann::json spec_computation(const nlohmann::json& spec) { return without(spec, {"dump", "checks"}); }

std::optional<nlohmann::json> merged_needs(const nlohmann::json& a, const nlohmann::json& b) {
  if (spec_computation(a) != spec_computation(b)) return std::nullopt;
  if (covers_outputs(a, b)) return a;
  if (covers_outputs(b, a)) return b;
  nlohmann::json dump_a = a.value("dump", nlohmann::json::object()), dump_b = b.value("dump", nlohmann::json::object());
  nlohmann::json checks_a = a.value("checks", nlohmann::json::object()),
                 checks_b = b.value("checks", nlohmann::json::object());
  if (without(dump_a, {"truth", "stats_only"}) != without(dump_b, {"truth", "stats_only"}) ||
      without(checks_a, {"meta"}) != without(checks_b, {"meta"}))
    return std::nullopt;
  nlohmann::json merged = a;
  nlohmann::json dump = without(dump_a, {"truth", "stats_only"});
  if (wants(dump_a, "truth") || wants(dump_b, "truth")) dump["truth"] = true;
  if (wants(dump_a, "stats_only") && wants(dump_b, "stats_only")) dump["stats_only"] = true;
  nlohmann::json checks = without(checks_a, {"meta"});
  if (wants(checks_a, "meta") || wants(checks_b, "meta")) checks["meta"] = true;
  merged.erase("dump");
  merged.erase("checks");
  if (a.contains("dump") || b.contains("dump")) merged["dump"] = dump;
  if (a.contains("checks") || b.contains("checks")) merged["checks"] = checks;
  return merged;
}

std::string resolved_dump_level(const nlohmann::json& spec) {
  const nlohmann::json dump = spec.value("dump", nlohmann::json::object());
  const std::string level = dump.is_object() ? dump.value("level", "auto") : "auto";
  if (level != "auto") return level;
  const std::string backend = spec.value("backend", "inductor");
  if (spec.contains("isolation") && !spec["isolation"].is_null()) return "none";
  if (spec.value("mode", "compiled") == "eager") return "aten";
  if (backend == "inductor" || backend == "torchair") return "compiled";
  return backend.find(':') != std::string::npos ? "none" : "fx";
}

bool takes_dump_share(const nlohmann::json& spec) {
  const nlohmann::json dump = spec.value("dump", nlohmann::json::object());
  const std::string level = resolved_dump_level(spec);
  const bool torchair_dump = spec.value("mode", "compiled") == "compiled" && spec.value("backend", "") == "torchair";
  return level != "none" && !torchair_dump && dump.is_object() && dump.value("stats_only", false) != true &&
         !dump.contains("max_bytes");
}

void set_dump_max_bytes(nlohmann::json& spec, const nlohmann::json& bytes) { spec["dump"]["max_bytes"] = bytes; }

RunSpecFields run_spec_fields(const nlohmann::json& spec) {
  RunSpecFields fields{text(spec, "mode"), text(spec, "backend"), text(spec, "device"), text(spec, "dtype")};
  fields.inductor_fallback_random =
      json_member(json_member(json_member(spec, "switches"), "inductor"), "fallback_random") == true;
  return fields;
}

const std::vector<std::string>& run_spec_field_names() {
  static const std::vector<std::string> names = {"version",
                                                 "output_dir",
                                                 "mode",
                                                 "backend",
                                                 "device",
                                                 "dtype",
                                                 "autocast",
                                                 "dynamic",
                                                 "fullgraph",
                                                 "seed",
                                                 "deterministic",
                                                 "switches",
                                                 "switches.inductor",
                                                 "switches.inductor_off",
                                                 "switches.torchair",
                                                 "switches.fusion_switch_file",
                                                 "dump",
                                                 "dump.level",
                                                 "dump.ops",
                                                 "dump.modules",
                                                 "dump.final",
                                                 "dump.io",
                                                 "dump.include",
                                                 "dump.exclude",
                                                 "dump.steps",
                                                 "dump.stats_only",
                                                 "dump.tensor_io",
                                                 "dump.max_bytes",
                                                 "dump.truth",
                                                 "checks",
                                                 "checks.meta",
                                                 "isolation",
                                                 "isolation.eager_nodes",
                                                 "isolation.repro"};
  return names;
}

}  // namespace diagnose
