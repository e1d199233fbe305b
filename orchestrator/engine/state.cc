#include "orchestrator/engine/state.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

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

const std::pair<StepStatus, const char*> kStepStatusNames[] = {
    {StepStatus::Pending, "pending"}, {StepStatus::Pass, "pass"},       {StepStatus::Fail, "fail"},
    {StepStatus::Error, "error"},     {StepStatus::Skipped, "skipped"},
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

std::string run_status_name(RunStatus s) {
  for (const auto& [status, name] : kRunStatusNames)
    if (status == s) return name;
  return "pending";
}

RunStatus run_status_from_name(const std::string& name) {
  for (const auto& [status, n] : kRunStatusNames)
    if (name == n) return status;
  return RunStatus::Pending;
}

bool run_complete(RunStatus s) { return s == RunStatus::Succeeded || s == RunStatus::Failed; }

std::string step_status_name(StepStatus s) {
  for (const auto& [status, name] : kStepStatusNames)
    if (status == s) return name;
  return "pending";
}

StepStatus step_status_from_name(const std::string& name) {
  for (const auto& [status, n] : kStepStatusNames)
    if (name == n) return status;
  return StepStatus::Pending;
}

StepResult* State::find(const std::string& id) {
  for (StepResult& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

const StepResult* State::find(const std::string& id) const { return const_cast<State*>(this)->find(id); }

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

nlohmann::json to_json(const StepResult& s) {
  nlohmann::json findings = nlohmann::json::array(), evidence = nlohmann::json::array(), runs = nlohmann::json::array();
  for (const Finding& f : s.findings) findings.push_back({{"message", f.message}, {"op", f.op}});
  for (const Evidence& e : s.evidence)
    evidence.push_back({{"kind", e.kind}, {"name", e.name}, {"path", e.path}, {"value", e.value}});
  for (const RunRecord& r : s.runs) runs.push_back(to_json(r));
  return {{"id", s.id},
          {"kind", s.kind},
          {"status", step_status_name(s.status)},
          {"summary", s.summary},
          {"category", s.category},
          {"findings", findings},
          {"evidence", evidence},
          {"metrics", s.metrics},
          {"reproduce", s.reproduce},
          {"runs", runs},
          {"fingerprint", s.fingerprint},
          {"started", s.started},
          {"finished", s.finished}};
}

StepResult step_result_from_json(const nlohmann::json& j) {
  StepResult s;
  s.id = j.at("id").get<std::string>();
  s.kind = j.value("kind", "");
  s.status = step_status_from_name(j.value("status", "pending"));
  s.summary = j.value("summary", "");
  s.category = j.value("category", "");
  for (const auto& f : j.value("findings", nlohmann::json::array()))
    s.findings.push_back({f.value("message", ""), f.value("op", "")});
  for (const auto& e : j.value("evidence", nlohmann::json::array()))
    s.evidence.push_back(
        {e.value("kind", ""), e.value("name", ""), e.value("path", ""), e.value("value", nlohmann::json())});
  s.metrics = j.value("metrics", nlohmann::json::object());
  s.reproduce = j.value("reproduce", std::vector<std::string>{});
  for (const auto& r : j.value("runs", nlohmann::json::array())) s.runs.push_back(run_record_from_json(r));
  s.fingerprint = j.value("fingerprint", "");
  s.started = j.value("started", 0.0);
  s.finished = j.value("finished", 0.0);
  return s;
}

nlohmann::json to_json(const State& s) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepResult& r : s.steps) steps.push_back(to_json(r));
  return {{"format", "diagnose-state"},       {"version", State::kVersion},   {"workflow_name", s.workflow_name},
          {"workflow_path", s.workflow_path}, {"run_dir", s.run_dir},         {"started", s.started},
          {"finished", s.finished},           {"interrupted", s.interrupted}, {"steps", steps},
          {"dump_budget", s.dump_budget}};
}

State state_from_json(const nlohmann::json& j) {
  if (j.value("format", "") != "diagnose-state") throw std::runtime_error("not a diagnose state file");
  if (j.value("version", 0) > State::kVersion)
    throw std::runtime_error("state file version " + std::to_string(j.value("version", 0)) +
                             " is newer than this diagnose understands (" + std::to_string(State::kVersion) + ")");
  State s;
  s.workflow_name = j.value("workflow_name", "");
  s.workflow_path = j.value("workflow_path", "");
  s.run_dir = j.value("run_dir", "");
  s.started = j.value("started", 0.0);
  s.finished = j.value("finished", 0.0);
  s.interrupted = j.value("interrupted", false);
  for (const auto& step : j.value("steps", nlohmann::json::array())) s.steps.push_back(step_result_from_json(step));
  s.dump_budget = j.value("dump_budget", nlohmann::json());
  return s;
}

void write_file_atomically(const std::string& path, const std::string& content) {
  std::string temporary = path + ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + temporary + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      throw std::runtime_error("cannot write " + temporary + ": " + std::strerror(e));
    }
    written += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
}

void save_state(const State& state, const std::string& path) {
  write_file_atomically(path, to_json(state).dump(2) + "\n");
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in || boost::filesystem::is_directory(path)) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return buffer.str();
}

State load_state(const std::string& path) {
  std::optional<std::string> text = read_file(path);
  if (!text) throw std::runtime_error("cannot read " + path);
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path + " is not valid JSON");
  try {
    return state_from_json(j);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

}  // namespace diagnose
