#include "orchestrator/exec/run_record.h"

#include "orchestrator/util/enum_names.h"

namespace diagnose {

namespace {

const std::pair<RunStatus, const char*> kRunStatusNames[] = {
    {RunStatus::Pending, "pending"},
    {RunStatus::Running, "running"},
    {RunStatus::Succeeded, "succeeded"},
    {RunStatus::Failed, "failed"},
    {RunStatus::Crashed, "crashed"},
    {RunStatus::TimedOut, "timed_out"},
    {RunStatus::Interrupted, "interrupted"},
    {RunStatus::NotStarted, "not_started"},
    {RunStatus::MissingOutputs, "missing_outputs"},
};

template <typename T>
nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> optional_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

}  // namespace

std::string run_status_name(RunStatus s) { return enum_name(kRunStatusNames, s); }

RunStatus run_status_from_name(const std::string& name) { return enum_from_name(kRunStatusNames, name); }

bool run_complete(RunStatus s) { return s == RunStatus::Succeeded || s == RunStatus::Failed; }

nlohmann::json to_json(const RunRecord& r) {
  nlohmann::json j = {{"name", r.name},
                      {"status", run_status_name(r.status)},
                      {"argv", r.argv},
                      {"cwd", r.cwd},
                      {"env", r.env},
                      {"dir", r.dir},
                      {"dump_dir", r.dump_dir},
                      {"stdout", r.stdout_path},
                      {"stderr", r.stderr_path},
                      {"exit_code", optional_json(r.exit_code)},
                      {"signal", optional_json(r.signal)},
                      {"started", r.started},
                      {"finished", r.finished},
                      {"attempts", r.attempts},
                      {"error", r.error}};
  if (!r.job_id.empty()) j["job_id"] = r.job_id;
  if (!r.launch.empty()) {
    j["launch"] = r.launch;
    j["launch_reason"] = r.launch_reason;
  }
  if (!r.identity.empty()) j["identity"] = r.identity;
  if (r.ranks > 1) j["ranks"] = r.ranks;
  if (!r.from_step.empty()) {
    j["from_step"] = r.from_step;
    j["from_run"] = r.from_run;
  }
  return j;
}

RunRecord run_record_from_json(const nlohmann::json& j) {
  RunRecord r;
  r.name = j.at("name").get<std::string>();
  r.status = run_status_from_name(j.value("status", "pending"));
  r.argv = j.value("argv", std::vector<std::string>{});
  r.cwd = j.value("cwd", "");
  r.env = j.value("env", std::map<std::string, std::string>{});
  r.dir = j.value("dir", "");
  r.dump_dir = j.value("dump_dir", "");
  r.stdout_path = j.value("stdout", "");
  r.stderr_path = j.value("stderr", "");
  r.exit_code = optional_from<int>(j, "exit_code");
  r.signal = optional_from<int>(j, "signal");
  r.started = j.value("started", 0.0);
  r.finished = j.value("finished", 0.0);
  r.attempts = j.value("attempts", 0);
  r.error = j.value("error", "");
  r.job_id = j.value("job_id", "");
  r.launch = j.value("launch", "");
  r.launch_reason = j.value("launch_reason", "");
  r.identity = j.value("identity", "");
  r.ranks = j.value("ranks", 1);
  r.from_step = j.value("from_step", "");
  r.from_run = j.value("from_run", "");
  return r;
}

}  // namespace diagnose
