#include "runspec/run_spec.h"

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <type_traits>

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

template <class Part, class T>
using IfPart = std::enable_if_t<std::is_same_v<std::remove_const_t<Part>, T>>;

// Each part's fields, by name, in spec.json's order: the one list that to_json, from_json and
// the patches follow. `visit` gets a field's name and that field of each of `parts` (one type).
template <class Visit, class Dump, class... More>
IfPart<Dump, DumpRequest> fields(Visit&& visit, Dump& dump, More&... more) {
  visit("level", dump.level, more.level...);
  visit("ops", dump.ops, more.ops...);
  visit("modules", dump.modules, more.modules...);
  visit("final", dump.final, more.final...);
  visit("io", dump.io, more.io...);
  visit("include", dump.include, more.include...);
  visit("exclude", dump.exclude, more.exclude...);
  visit("steps", dump.steps, more.steps...);
  visit("stats_only", dump.stats_only, more.stats_only...);
  visit("tensor_io", dump.tensor_io, more.tensor_io...);
  visit("max_bytes", dump.max_bytes, more.max_bytes...);
  visit("truth", dump.truth, more.truth...);
  visit("boundaries", dump.boundaries, more.boundaries...);
}

template <class Visit, class Switches, class... More>
IfPart<Switches, RunSwitches> fields(Visit&& visit, Switches& switches, More&... more) {
  visit("inductor", switches.inductor, more.inductor...);
  visit("inductor_off", switches.inductor_off, more.inductor_off...);
  visit("torchair", switches.torchair, more.torchair...);
  visit("fusion_switch_file", switches.fusion_switch_file, more.fusion_switch_file...);
}

template <class Visit, class Checks, class... More>
IfPart<Checks, RunChecks> fields(Visit&& visit, Checks& checks, More&... more) {
  visit("meta", checks.meta, more.meta...);
}

template <class Visit, class Isolation, class... More>
IfPart<Isolation, RunIsolation> fields(Visit&& visit, Isolation& isolation, More&... more) {
  visit("eager_nodes", isolation.eager_nodes, more.eager_nodes...);
  visit("repro", isolation.repro, more.repro...);
  visit("eager_writes", isolation.eager_writes, more.eager_writes...);
  visit("observe", isolation.observe, more.observe...);
}

template <class Visit, class Spec, class... More>
IfPart<Spec, RunSpec> fields(Visit&& visit, Spec& spec, More&... more) {
  visit("version", spec.version, more.version...);
  visit("output_dir", spec.output_dir, more.output_dir...);
  visit("mode", spec.mode, more.mode...);
  visit("backend", spec.backend, more.backend...);
  visit("device", spec.device, more.device...);
  visit("dtype", spec.dtype, more.dtype...);
  visit("autocast", spec.autocast, more.autocast...);
  visit("dynamic", spec.dynamic, more.dynamic...);
  visit("fullgraph", spec.fullgraph, more.fullgraph...);
  visit("seed", spec.seed, more.seed...);
  visit("deterministic", spec.deterministic, more.deterministic...);
  visit("switches", spec.switches, more.switches...);
  visit("dump", spec.dump, more.dump...);
  visit("checks", spec.checks, more.checks...);
  visit("isolation", spec.isolation, more.isolation...);
}

// A visitor that puts each set field into `out`.
auto writer(json& out) {
  return [&out](const char* key, const auto& value) { put(out, key, value); };
}

}  // namespace

void to_json(json& out, const DumpRequest& dump) { fields(writer(out = json::object()), dump); }
void to_json(json& out, const RunSwitches& switches) { fields(writer(out = json::object()), switches); }
void to_json(json& out, const RunChecks& checks) { fields(writer(out = json::object()), checks); }
void to_json(json& out, const RunIsolation& isolation) { fields(writer(out = json::object()), isolation); }
void to_json(json& out, const RunSpec& spec) { fields(writer(out = json::object()), spec); }

namespace {

// `part`'s fields in `in`, the JSON object `where`; throws on any other member.
template <class Part>
void read_part(const json& in, Part& part, const char* where) {
  Members m(in, where);
  fields(m.reader(), part);
  m.check_all_read();
}

}  // namespace

void from_json(const json& in, DumpRequest& dump) { read_part(in, dump, "dump"); }
void from_json(const json& in, RunSwitches& switches) { read_part(in, switches, "switches"); }
void from_json(const json& in, RunChecks& checks) { read_part(in, checks, "checks"); }
void from_json(const json& in, RunIsolation& isolation) { read_part(in, isolation, "isolation"); }
void from_json(const json& in, RunSpec& spec) { read_part(in, spec, "spec"); }

std::optional<RunSpec> echoed_run_spec(const nlohmann::json& echo) {
  try {
    return echo.get<RunSpec>();
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

namespace {

template <class T>
constexpr bool is_part = std::is_same_v<T, DumpRequest> || std::is_same_v<T, RunSwitches> ||
                         std::is_same_v<T, RunChecks> || std::is_same_v<T, RunIsolation>;

std::string dotted(const std::vector<std::string>& path) {
  std::string text;
  for (const std::string& key : path) text += (text.empty() ? "" : ".") + key;
  return text;
}

// A visitor that reads the members of `object` (the part at `path`) it is given into a patch: a
// null one resets its field, a part is read member by member; a member of the wrong type, or one
// of a part that no field names, goes to `errors`.
class PatchReader {
 public:
  PatchReader(const json& object, std::vector<std::string> path, RunSpecPatch& patch,
              std::vector<RunSpecPatchError>& errors)
      : object_(object), path_(std::move(path)), patch_(patch), errors_(errors) {}

  template <class T>
  void operator()(const char* key, std::optional<T>& set) {
    const json* value = member<T>(key);
    if (!value) return;
    if constexpr (is_part<T>) {
      PatchReader part(*value, path_of(key), patch_, errors_);
      fields(part, set.emplace());
      for (const auto& item : value->items())
        if (!part.named_.count(item.key()))
          part.error(item.key(), "unknown key in " + dotted(part.path_) + ": " + item.key());
    } else {
      set = value->get<T>();
    }
  }
  template <class T>
  void operator()(const char* key, T& set) {  // a field always there, whose default is empty
    const json* value = member<T>(key);
    if (value && value->empty())
      patch_.reset.insert(dotted(path_of(key)));
    else if (value)
      set = value->get<T>();
  }

 private:
  // `key`'s member when it sets its field: nullptr when it is absent, null (the field reset) or
  // of the wrong type.
  template <class T>
  const json* member(const char* key) {
    named_.insert(key);
    auto found = object_.find(key);
    if (found == object_.end()) return nullptr;
    if (found->is_null()) {
      patch_.reset.insert(dotted(path_of(key)));
      return nullptr;
    }
    if (type_fits(*found, static_cast<const T*>(nullptr))) return &*found;
    error(key, dotted(path_of(key)) + " has the wrong type: " + found->dump());
    return nullptr;
  }
  std::vector<std::string> path_of(const std::string& key) const {
    std::vector<std::string> path = path_;
    path.push_back(key);
    return path;
  }
  void error(const std::string& key, std::string message) { errors_.push_back({path_of(key), std::move(message)}); }

  const json& object_;
  std::vector<std::string> path_;
  RunSpecPatch& patch_;
  std::vector<RunSpecPatchError>& errors_;
  std::set<std::string> named_;
};

// A visitor that changes each field of a spec's part (at `prefix`) as a patch's says.
class Patcher {
 public:
  Patcher(const std::set<std::string>& reset, std::string prefix) : reset_(reset), prefix_(std::move(prefix)) {}

  template <class T>
  void operator()(const char* key, std::optional<T>& field, const std::optional<T>& set) const {
    if (reset_.count(prefix_ + key)) {
      field.reset();
    } else if (!set) {
      return;
    } else if constexpr (is_part<T>) {
      fields(Patcher(reset_, prefix_ + key + "."), field ? *field : field.emplace(), *set);
    } else if constexpr (std::is_same_v<T, json>) {
      json merged = field.value_or(json());
      merged.merge_patch(*set);
      field = std::move(merged);
    } else {
      field = set;
    }
  }
  template <class T>
  void operator()(const char* key, T& field, const T& set) const {
    if (reset_.count(prefix_ + key))
      field = T();
    else if (!set.empty())
      field = set;
  }

 private:
  const std::set<std::string>& reset_;
  std::string prefix_;
};

}  // namespace

RunSpecPatch run_spec_patch(const json& side, std::vector<RunSpecPatchError>& errors) {
  RunSpecPatch patch;
  PatchReader reader(side, {}, patch, errors);
  fields(reader, patch.set);
  return patch;
}

RunSpec patched(RunSpec base, const RunSpecPatch& patch) {
  fields(Patcher(patch.reset, ""), base, patch.set);
  return base;
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
