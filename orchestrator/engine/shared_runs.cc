#include "orchestrator/engine/shared_runs.h"

#include "orchestrator/engine/digest.h"
#include "orchestrator/engine/dump_budget.h"

namespace diagnose {

namespace {

// Set by the engine and plugin_run for each request; they name the run, not what it computes.
const char* kPerRunVariables[] = {"DIAGNOSE_STEP", "DIAGNOSE_DUMP_DIR", "DIAGNOSE_RUN_SPEC",
                                  "DIAGNOSE_RUN_SPEC_DIGEST"};

nlohmann::json without(nlohmann::json object, std::initializer_list<const char*> keys) {
  if (!object.is_object()) return object;
  for (const char* key : keys) object.erase(key);
  return object;
}

// The identity of `request` asked with `spec`.
std::string identity_with(const nlohmann::json& spec, RunRequest request) {
  request.spec_identity = spec_identity(spec);
  return run_identity(request);
}

std::string base_identity(const nlohmann::json& spec, const RunRequest& request) {
  return identity_with(without(spec, {"dump", "checks"}), request);
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

}  // namespace

std::string spec_identity(const nlohmann::json& spec) {
  nlohmann::json normal = without(spec, {"output_dir"});
  if (normal.contains("switches") && normal["switches"].is_object()) {
    nlohmann::json& switches = normal["switches"];
    if (switches.contains("inductor_off") && switches["inductor_off"].empty()) switches.erase("inductor_off");
    if (switches.empty()) normal.erase("switches");
  }
  return hex_digest(fnv1a(normal.dump()));
}

std::string run_identity(const RunRequest& request) {
  if (request.spec_identity.empty()) return "";
  std::map<std::string, std::string> env = request.env;
  for (const char* name : kPerRunVariables) env.erase(name);
  // A run in its own fresh directory is the same run whichever directory that is.
  std::string cwd = request.cwd == request.dir ? "(its own directory)" : request.cwd;
  nlohmann::json identity = {{"spec", request.spec_identity}, {"argv", request.argv}, {"cwd", cwd}, {"env", env}};
  // The k-th run of a configuration is another step's k-th run, never its own first run again.
  if (request.repeat > 0) identity["repeat"] = request.repeat;
  return hex_digest(fnv1a(identity.dump()));
}

std::optional<nlohmann::json> merged_needs(const nlohmann::json& a, const nlohmann::json& b) {
  if (without(a, {"dump", "checks"}) != without(b, {"dump", "checks"})) return std::nullopt;
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

void SharedRuns::plan(const std::vector<PlannedRun>& runs) {
  for (const PlannedRun& run : runs) {
    std::string base = base_identity(run.spec, run.request);
    size_t index = 0;
    for (; index < groups_.size(); ++index) {
      if (groups_[index].base != base) continue;
      if (std::optional<nlohmann::json> merged = merged_needs(groups_[index].spec, run.spec)) {
        groups_[index].spec = *merged;
        break;
      }
    }
    if (index == groups_.size()) groups_.push_back({base, run.spec, run.request});
    group_of_[{run.step, run.name}] = index;
  }
  for (const Group& group : groups_) planned_dirs_.emplace(identity_with(group.spec, group.request), group.request.dir);
}

nlohmann::json SharedRuns::spec_for(const PlannedRun& run) const {
  auto member = group_of_.find({run.step, run.name});
  if (member == group_of_.end()) return run.spec;
  const Group& group = groups_[member->second];
  // A step may ask for other runs than it planned (its spec depends on an earlier result).
  std::optional<nlohmann::json> covering = merged_needs(group.spec, run.spec);
  bool covered = covering && *covering == group.spec && base_identity(run.spec, run.request) == group.base;
  return covered ? group.spec : run.spec;
}

std::optional<std::string> SharedRuns::dir_for(const std::string& identity) const {
  auto planned = planned_dirs_.find(identity);
  if (planned == planned_dirs_.end()) return std::nullopt;
  if (const SharedRun* earlier = done(identity)) return earlier->record.dir;
  return planned->second;
}

const SharedRun* SharedRuns::done(const std::string& identity) const {
  auto found = done_.find(identity);
  return found == done_.end() ? nullptr : &found->second;
}

void SharedRuns::add_done(const std::string& identity, const std::string& step, const RunRecord& record) {
  done_.emplace(identity, SharedRun{step, record});
}

}  // namespace diagnose
