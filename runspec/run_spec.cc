#include "runspec/run_spec.h"

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runspec/json_member.h"

namespace diagnose {

namespace {

using nlohmann::json;

template <class T>
void put(json& out, const char* key, const T& value) {
  out[key] = value;
}
template <class T>
void put(json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = *value;
}

bool type_fits(const json& value, const std::string*) { return value.is_string(); }
bool type_fits(const json& value, const bool*) { return value.is_boolean(); }
bool type_fits(const json& value, const int64_t*) { return value.is_number_integer(); }
bool type_fits(const json& value, const json*) { return value.is_object(); }
template <class T>
bool type_fits(const json& value, const std::vector<T>*) {
  if (!value.is_array()) return false;
  for (const json& item : value)
    if (!type_fits(item, static_cast<const T*>(nullptr))) return false;
  return true;
}
template <class T>
bool type_fits(const json& value, const T*) {
  return value.is_object();  // a nested part of the spec, read field by field
}

// The members of one JSON object of a spec, read once each; what is left over is unknown.
class Members {
 public:
  Members(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object.is_object()) throw std::invalid_argument(where_ + " must be a JSON object");
  }
  template <class T>
  void read(const char* key, std::optional<T>& out) {
    read_keys_.insert(key);
    auto found = object_.find(key);
    if (found == object_.end() || found->is_null()) return;
    if (!type_fits(*found, static_cast<const T*>(nullptr)))
      throw std::invalid_argument(where_ + "." + key + " has the wrong type: " + found->dump());
    out = found->get<T>();
  }
  template <class T>
  void read(const char* key, T& out) {  // a field that is always there (empty when not written)
    std::optional<T> value;
    read(key, value);
    if (value) out = std::move(*value);
  }
  // A visitor that reads each field it is given.
  auto reader() {
    return [this](const char* key, auto& value) { read(key, value); };
  }
  // The members read() asked for that `object` has.
  json read_members() const {
    json out = json::object();
    for (const std::string& key : read_keys_)
      if (object_.contains(key)) out[key] = object_.at(key);
    return out;
  }
  // Throws naming a member no read() asked for.
  void check_all_read() const {
    for (const auto& [key, value] : object_.items())
      if (!read_keys_.count(key)) throw std::invalid_argument("unknown key in " + where_ + ": " + key);
  }

 private:
  const json& object_;
  std::string where_;
  std::set<std::string> read_keys_;
};

// Each part's fields, by name, in spec.json's order: the one list to_json and from_json follow.
template <class Dump, class Visit>
void dump_fields(Dump& dump, Visit&& visit) {
  visit("level", dump.level);
  visit("ops", dump.ops);
  visit("modules", dump.modules);
  visit("final", dump.final);
  visit("io", dump.io);
  visit("include", dump.include);
  visit("exclude", dump.exclude);
  visit("steps", dump.steps);
  visit("stats_only", dump.stats_only);
  visit("tensor_io", dump.tensor_io);
  visit("max_bytes", dump.max_bytes);
  visit("truth", dump.truth);
  visit("boundaries", dump.boundaries);
}

template <class Switches, class Visit>
void switches_fields(Switches& switches, Visit&& visit) {
  visit("inductor", switches.inductor);
  visit("inductor_off", switches.inductor_off);
  visit("torchair", switches.torchair);
  visit("fusion_switch_file", switches.fusion_switch_file);
}

template <class Checks, class Visit>
void checks_fields(Checks& checks, Visit&& visit) {
  visit("meta", checks.meta);
}

template <class Isolation, class Visit>
void isolation_fields(Isolation& isolation, Visit&& visit) {
  visit("eager_nodes", isolation.eager_nodes);
  visit("repro", isolation.repro);
  visit("eager_writes", isolation.eager_writes);
}

template <class Spec, class Visit>
void spec_fields(Spec& spec, Visit&& visit) {
  visit("version", spec.version);
  visit("output_dir", spec.output_dir);
  visit("mode", spec.mode);
  visit("backend", spec.backend);
  visit("device", spec.device);
  visit("dtype", spec.dtype);
  visit("autocast", spec.autocast);
  visit("dynamic", spec.dynamic);
  visit("fullgraph", spec.fullgraph);
  visit("seed", spec.seed);
  visit("deterministic", spec.deterministic);
  visit("switches", spec.switches);
  visit("dump", spec.dump);
  visit("checks", spec.checks);
  visit("isolation", spec.isolation);
}

// A visitor that puts each set field into `out`.
auto writer(json& out) {
  return [&out](const char* key, const auto& value) { put(out, key, value); };
}

}  // namespace

void to_json(json& out, const DumpRequest& dump) { dump_fields(dump, writer(out = json::object())); }
void to_json(json& out, const RunSwitches& switches) { switches_fields(switches, writer(out = json::object())); }
void to_json(json& out, const RunChecks& checks) { checks_fields(checks, writer(out = json::object())); }
void to_json(json& out, const RunIsolation& isolation) { isolation_fields(isolation, writer(out = json::object())); }
void to_json(json& out, const RunSpec& spec) { spec_fields(spec, writer(out = json::object())); }

void from_json(const json& in, DumpRequest& dump) {
  Members m(in, "dump");
  dump_fields(dump, m.reader());
  m.check_all_read();
}

void from_json(const json& in, RunSwitches& switches) {
  Members m(in, "switches");
  switches_fields(switches, m.reader());
  m.check_all_read();
}

void from_json(const json& in, RunChecks& checks) {
  Members m(in, "checks");
  checks_fields(checks, m.reader());
  m.check_all_read();
}

void from_json(const json& in, RunIsolation& isolation) {
  Members m(in, "isolation");
  isolation_fields(isolation, m.reader());
  m.check_all_read();
}

namespace {

// The spec's fields in `in`; with `only_spec`, throws on any other member. `fields`, when given,
// gets the members of `in` that are the spec's, as written (null ones too).
RunSpec read_spec(const json& in, bool only_spec, json* fields = nullptr) {
  RunSpec spec;
  Members m(in, "spec");
  spec_fields(spec, m.reader());
  if (only_spec) m.check_all_read();
  if (fields) *fields = m.read_members();
  return spec;
}

}  // namespace

void from_json(const json& in, RunSpec& spec) { spec = read_spec(in, true); }

std::optional<RunSpec> echoed_run_spec(const nlohmann::json& echo) {
  try {
    return read_spec(echo, true);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

DumpRequest dump_at(std::string level) {
  DumpRequest dump;
  dump.level = std::move(level);
  return dump;
}

RunSpec spec_of(std::string mode, DumpRequest dump) {
  RunSpec spec;
  spec.mode = std::move(mode);
  spec.dump = std::move(dump);
  return spec;
}

bool operator==(const RunSpec& a, const RunSpec& b) { return json(a) == json(b); }

std::string run_spec_path(const std::string& run_dir) { return run_dir + "/spec.json"; }

std::string run_spec_text(const RunSpec& spec) { return json(spec).dump(2) + "\n"; }

std::optional<RunSpec> read_run_spec(const std::string& run_dir) {
  std::ifstream file(run_spec_path(run_dir), std::ios::binary);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return echoed_run_spec(json::parse(text.str(), nullptr, false));
}

RunSpec overlaid(const RunSpec& base, const RunSpec& over) {
  json merged = base;
  merged.merge_patch(json(over));
  return merged.get<RunSpec>();
}

RunSpec overlaid_by_side(const RunSpec& base, const nlohmann::json& side) {
  json patch = json::object();
  read_spec(side, false, &patch);
  json merged = base;
  merged.merge_patch(patch);
  return merged.get<RunSpec>();
}

namespace {

// Whether `spec`'s dump only observes what the run computes, so that its final outputs are those
// of the same run dumping nothing: eager ATen ops through a dispatch mode (`auto` resolved as the
// plugin does). Inductor's buffer dump compiles anew, its FX graph cache off, which can compute
// something else than the run as the user runs it (pytorch/pytorch#185382: a wrong cache hit);
// an FX-level dump replaces the backend; TorchAir's GE dump is GE's own.
bool observes_only(const RunSpec& spec) {
  return !spec.isolation && spec.mode == "eager" && resolved_dump_level(spec) == "aten";
}

std::string asked_level(const RunSpec& spec) { return spec.dump ? spec.dump->level.value_or("auto") : "auto"; }

// `outputs_only` (dump level none) is covered by `dumping` when `dumping`'s dump only observes and
// holds each truth `outputs_only` asks for.
bool covers_outputs(const RunSpec& dumping, const RunSpec& outputs_only) {
  const DumpRequest dump = outputs_only.dump.value_or(DumpRequest{});
  const DumpRequest dumping_dump = dumping.dump.value_or(DumpRequest{});
  // The final outputs are written whatever the op dump's filters and budget, but not with
  // `final: false`, and their truth only on the steps the dump shadows.
  bool same_outputs =
      dumping_dump.final.value_or(true) == dump.final.value_or(true) && dumping_dump.steps == dump.steps;
  return asked_level(outputs_only) == "none" && asked_level(dumping) != "none" && observes_only(dumping) &&
         same_outputs && (dump.truth != true || dumping_dump.truth == true) &&
         json(outputs_only.checks.value_or(RunChecks{})) == json::object();
}

// A dump without what merged_needs merges.
DumpRequest without_merged(DumpRequest dump) {
  dump.truth.reset();
  dump.stats_only.reset();
  return dump;
}

}  // namespace

nlohmann::json spec_identity_fields(const RunSpec& spec) {
  json normal = spec;
  normal.erase("output_dir");
  if (normal.contains("switches")) {
    json& switches = normal["switches"];
    if (switches.contains("inductor_off") && switches["inductor_off"].empty()) switches.erase("inductor_off");
    if (switches.empty()) normal.erase("switches");
  }
  return normal;
}

RunSpec spec_computation(RunSpec spec) {
  spec.dump.reset();
  spec.checks.reset();
  return spec;
}

std::optional<RunSpec> merged_needs(const RunSpec& a, const RunSpec& b) {
  if (spec_computation(a) != spec_computation(b)) return std::nullopt;
  if (covers_outputs(a, b)) return a;
  if (covers_outputs(b, a)) return b;
  const DumpRequest dump_a = a.dump.value_or(DumpRequest{}), dump_b = b.dump.value_or(DumpRequest{});
  const RunChecks checks_a = a.checks.value_or(RunChecks{}), checks_b = b.checks.value_or(RunChecks{});
  if (json(without_merged(dump_a)) != json(without_merged(dump_b))) return std::nullopt;
  RunSpec merged = a;
  merged.dump.reset();
  merged.checks.reset();
  if (a.dump || b.dump) {
    DumpRequest& dump = merged.dump.emplace(without_merged(dump_a));
    if (dump_a.truth == true || dump_b.truth == true) dump.truth = true;
    if (dump_a.stats_only == true && dump_b.stats_only == true) dump.stats_only = true;
  }
  if (a.checks || b.checks) {
    RunChecks& checks = merged.checks.emplace();
    if (checks_a.meta == true || checks_b.meta == true) checks.meta = true;
  }
  return merged;
}

std::string resolved_dump_level(const RunSpec& spec) {
  const std::string level = asked_level(spec);
  if (level != "auto") return level;
  const std::string backend = spec.backend.value_or("inductor");
  if (spec.isolation) return "none";
  if (spec.mode.value_or("compiled") == "eager") return "aten";
  if (backend == "inductor" || backend == "torchair") return "compiled";
  return backend.find(':') != std::string::npos ? "none" : "fx";
}

bool takes_dump_share(const RunSpec& spec) {
  const DumpRequest dump = spec.dump.value_or(DumpRequest{});
  const bool torchair_dump = spec.mode.value_or("compiled") == "compiled" && spec.backend == "torchair";
  return resolved_dump_level(spec) != "none" && !torchair_dump && dump.stats_only != true && !dump.max_bytes;
}

RunSpecFields run_spec_fields(const nlohmann::json& spec) {
  auto text = [&](const char* key) {
    const json& value = json_member(spec, key);
    return value.is_string() ? std::optional<std::string>(value.get<std::string>()) : std::nullopt;
  };
  RunSpecFields fields{text("mode"), text("backend"), text("device"), text("dtype")};
  fields.inductor_fallback_random =
      json_member(json_member(json_member(spec, "switches"), "inductor"), "fallback_random") == true;
  return fields;
}

RunSpecFields run_spec_fields(const RunSpec& spec) { return run_spec_fields(json(spec)); }

}  // namespace diagnose
