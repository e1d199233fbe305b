#include "orchestrator/report/report_json.h"

#include <ctime>

#include "orchestrator/util/log_tail.h"

namespace diagnose {

nlohmann::json iso_time(double seconds) {
  if (seconds <= 0) return nullptr;
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

namespace {

double duration(double started, double finished) { return started > 0 && finished >= started ? finished - started : 0; }

nlohmann::json findings_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Finding& f : findings)
    out.push_back({{"message", f.message}, {"op", f.op.empty() ? nlohmann::json() : nlohmann::json(f.op)}});
  return out;
}

nlohmann::json evidence_json(const std::vector<Evidence>& evidence) {
  nlohmann::json out = nlohmann::json::array();
  for (const Evidence& e : evidence) {
    nlohmann::json item = {{"kind", e.kind}, {"name", e.name}};
    item["path"] = e.path.empty() ? nlohmann::json() : nlohmann::json(e.path);
    item["value"] = e.value;
    out.push_back(item);
  }
  return out;
}

nlohmann::json run_json(const RunRecord& r) {
  nlohmann::json run = {{"name", r.name},
                        {"status", run_status_name(r.status)},
                        {"argv", r.argv},
                        {"cwd", r.cwd},
                        {"exit_code", r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json()},
                        {"signal", r.signal ? nlohmann::json(*r.signal) : nlohmann::json()},
                        {"attempts", r.attempts},
                        {"started", iso_time(r.started)},
                        {"duration_s", duration(r.started, r.finished)},
                        {"stdout", r.stdout_path},
                        {"stderr", r.stderr_path},
                        {"dump_dir", r.dump_dir},
                        {"error", r.error.empty() ? nlohmann::json() : nlohmann::json(r.error)}};
  if (!r.launch.empty()) {
    run["launch"] = r.launch;
    run["launch_reason"] = r.launch_reason;
  }
  if (!r.from_step.empty()) run["shared_from"] = {{"step", r.from_step}, {"run", r.from_run}};
  run["log_tail"] =
      r.status == RunStatus::Succeeded || r.status == RunStatus::Pending
          ? nlohmann::json()
          : nlohmann::json(log_tail(r.stderr_path).empty() ? log_tail(r.stdout_path) : log_tail(r.stderr_path));
  return run;
}

}  // namespace

nlohmann::json report_json(const State& state, const Verdict& verdict) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepResult& s : state.steps) {
    nlohmann::json runs = nlohmann::json::array();
    for (const RunRecord& r : s.runs) runs.push_back(run_json(r));
    steps.push_back({{"id", s.id},
                     {"kind", s.kind},
                     {"status", step_status_name(s.status)},
                     {"summary", s.summary},
                     {"category", s.category},
                     {"started", iso_time(s.started)},
                     {"duration_s", duration(s.started, s.finished)},
                     {"findings", findings_json(s.findings)},
                     {"evidence", evidence_json(s.evidence)},
                     {"metrics", s.metrics},
                     {"reproduce", s.reproduce},
                     {"runs", runs}});
  }
  return {{"format", "diagnose-report"},
          {"version", kReportVersion},
          {"workflow", {{"name", state.workflow_name}, {"path", state.workflow_path}}},
          {"run_dir", state.run_dir},
          {"started", iso_time(state.started)},
          {"finished", iso_time(state.finished)},
          {"complete", state.finished > 0 && !state.interrupted},
          {"exit_code", verdict.exit_code},
          {"verdict",
           {{"category", verdict.category},
            {"title", verdict.title},
            {"summary", verdict.summary},
            {"step", verdict.step.empty() ? nlohmann::json() : nlohmann::json(verdict.step)},
            {"culprit", verdict.culprit.empty() ? nlohmann::json() : nlohmann::json(verdict.culprit)},
            {"findings", findings_json(verdict.findings)},
            {"evidence", evidence_json(verdict.evidence)},
            {"reproduce", verdict.reproduce},
            {"advice", verdict.advice},
            {"failed_steps", verdict.failed_steps},
            {"errored_steps", verdict.errored_steps}}},
          {"steps", steps},
          {"dump_budget", state.dump_budget}};
}

}  // namespace diagnose
