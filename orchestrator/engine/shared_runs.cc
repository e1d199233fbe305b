#include "orchestrator/engine/shared_runs.h"

#include "orchestrator/engine/digest.h"
#include "runspec/run_spec.h"

namespace diagnose {

namespace {

// Set by the engine and plugin_run for each request; they name the run, not what it computes.
const char* kPerRunVariables[] = {"DIAGNOSE_STEP", "DIAGNOSE_DUMP_DIR", "DIAGNOSE_RUN_SPEC",
                                  "DIAGNOSE_RUN_SPEC_DIGEST"};

// The identity of `request` asked with `spec`.
std::string identity_with(const RunSpec& spec, RunRequest request) {
  request.spec_identity = spec_identity(spec);
  return run_identity(request);
}

std::string base_identity(const RunSpec& spec, const RunRequest& request) {
  return identity_with(spec_computation(spec), request);
}

}  // namespace

std::string spec_identity(const RunSpec& spec) { return hex_digest(fnv1a(spec_identity_fields(spec).dump())); }

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

void SharedRuns::plan(const std::vector<PlannedRun>& runs) {
  for (const PlannedRun& run : runs) {
    std::string base = base_identity(run.spec, run.request);
    size_t index = 0;
    for (; index < groups_.size(); ++index) {
      if (groups_[index].base != base) continue;
      if (std::optional<RunSpec> merged = merged_needs(groups_[index].spec, run.spec)) {
        groups_[index].spec = *merged;
        break;
      }
    }
    if (index == groups_.size()) groups_.push_back({base, run.spec, run.request});
    group_of_[{run.step, run.name}] = index;
  }
  for (const Group& group : groups_) planned_dirs_.emplace(identity_with(group.spec, group.request), group.request.dir);
}

RunSpec SharedRuns::spec_for(const PlannedRun& run) const {
  auto member = group_of_.find({run.step, run.name});
  if (member == group_of_.end()) return run.spec;
  const Group& group = groups_[member->second];
  // A step may ask for other runs than it planned (its spec depends on an earlier result).
  std::optional<RunSpec> covering = merged_needs(group.spec, run.spec);
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
