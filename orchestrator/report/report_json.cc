#include "orchestrator/report/report_json.h"

#include <ctime>
#include <stdexcept>

#include "orchestrator/report/run_report.h"

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

using nlohmann::json;

json text_or_null(const std::string& text) { return text.empty() ? json() : json(text); }
std::string text_of(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}
std::optional<int> optional_int(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? std::optional<int>(j[key].get<int>()) : std::nullopt;
}

json findings_json(const std::vector<Finding>& findings) {
  json out = json::array();
  for (const Finding& f : findings) out.push_back({{"message", f.message}, {"op", text_or_null(f.op)}});
  return out;
}

std::vector<Finding> findings_from_json(const json& j) {
  std::vector<Finding> out;
  for (const json& f : j) out.push_back({text_of(f, "message"), text_of(f, "op")});
  return out;
}

json evidence_json(const std::vector<Evidence>& evidence) {
  json out = json::array();
  for (const Evidence& e : evidence)
    out.push_back({{"kind", e.kind}, {"name", e.name}, {"path", text_or_null(e.path)}, {"value", e.value}});
  return out;
}

std::vector<Evidence> evidence_from_json(const json& j) {
  std::vector<Evidence> out;
  for (const json& e : j)
    out.push_back({text_of(e, "kind"), text_of(e, "name"), text_of(e, "path"), e.value("value", json())});
  return out;
}

json run_json(const ReportedRun& r) {
  json run = {{"name", r.name},
              {"status", run_status_name(r.status)},
              {"argv", r.argv},
              {"cwd", r.cwd},
              {"env", r.env},
              {"exit_code", r.exit_code ? json(*r.exit_code) : json()},
              {"signal", r.signal ? json(*r.signal) : json()},
              {"attempts", r.attempts},
              {"started", r.started},
              {"finished", r.finished},
              {"duration_s", r.duration_s},
              {"stdout", r.stdout_path},
              {"stderr", r.stderr_path},
              {"dump_dir", r.dump_dir},
              {"dump_kept", r.dump_kept},
              {"error", text_or_null(r.error)},
              {"log_tail", r.log_tail},
              {"stderr_tail", text_or_null(r.stderr_tail)}};
  if (!r.launch.empty()) {
    run["launch"] = r.launch;
    run["launch_reason"] = r.launch_reason;
  }
  if (!r.from_step.empty()) run["shared_from"] = {{"step", r.from_step}, {"run", r.from_run}};
  return run;
}

ReportedRun run_from_json(const json& j) {
  ReportedRun r;
  r.name = text_of(j, "name");
  r.status = run_status_from_name(text_of(j, "status"));
  r.argv = j.value("argv", std::vector<std::string>());
  r.cwd = text_of(j, "cwd");
  if (j.contains("env") && j["env"].is_object())
    for (const auto& [name, value] : j["env"].items())
      if (value.is_string()) r.env[name] = value.get<std::string>();
  r.exit_code = optional_int(j, "exit_code");
  r.signal = optional_int(j, "signal");
  r.attempts = j.value("attempts", 0);
  r.started = j.value("started", json());
  r.finished = j.value("finished", json());
  r.duration_s = j.value("duration_s", 0.0);
  r.stdout_path = text_of(j, "stdout");
  r.stderr_path = text_of(j, "stderr");
  r.dump_dir = text_of(j, "dump_dir");
  r.dump_kept = j.value("dump_kept", false);
  r.error = text_of(j, "error");
  r.launch = text_of(j, "launch");
  r.launch_reason = text_of(j, "launch_reason");
  if (j.contains("shared_from") && j["shared_from"].is_object()) {
    r.from_step = text_of(j["shared_from"], "step");
    r.from_run = text_of(j["shared_from"], "run");
  }
  r.log_tail = j.value("log_tail", json());
  r.stderr_tail = text_of(j, "stderr_tail");
  return r;
}

json sections_json(const std::vector<ReportSection>& sections) {
  json out = json::array();
  for (const ReportSection& s : sections)
    out.push_back({{"kind", section_kind_name(s.kind)}, {"path", s.path}, {"document", s.document}});
  return out;
}

std::vector<ReportSection> sections_from_json(const json& j) {
  std::vector<ReportSection> out;
  for (const json& s : j) {
    std::string kind = text_of(s, "kind");
    ReportSection section{ReportSection::Kind::Compare, text_of(s, "path"), s.value("document", json::object())};
    if (kind == "bisection")
      section.kind = ReportSection::Kind::Bisection;
    else if (kind == "trend")
      section.kind = ReportSection::Kind::Trend;
    else if (kind != "compare")
      continue;
    out.push_back(std::move(section));
  }
  return out;
}

json step_json(const StepReport& s) {
  json runs = json::array();
  for (const ReportedRun& r : s.runs) runs.push_back(run_json(r));
  return {{"id", s.id},
          {"kind", s.kind},
          {"status", step_status_name(s.status)},
          {"summary", s.summary},
          {"category", s.category},
          {"started", s.started},
          {"duration_s", s.duration_s},
          {"findings", findings_json(s.findings)},
          {"evidence", evidence_json(s.evidence)},
          {"metrics", s.metrics},
          {"reproduce", s.reproduce},
          {"runs", runs},
          {"when", text_or_null(s.when)},
          {"sections", sections_json(s.sections)}};
}

StepReport step_from_json(const json& j) {
  StepReport s;
  s.id = text_of(j, "id");
  s.kind = text_of(j, "kind");
  s.status = step_status_from_name(text_of(j, "status"));
  s.summary = text_of(j, "summary");
  s.category = text_of(j, "category");
  s.started = j.value("started", json());
  s.duration_s = j.value("duration_s", 0.0);
  s.findings = findings_from_json(j.value("findings", json::array()));
  s.evidence = evidence_from_json(j.value("evidence", json::array()));
  s.metrics = j.value("metrics", json::object());
  s.reproduce = j.value("reproduce", std::vector<std::string>());
  for (const json& r : j.value("runs", json::array())) s.runs.push_back(run_from_json(r));
  s.when = text_of(j, "when");
  s.sections = sections_from_json(j.value("sections", json::array()));
  return s;
}

Verdict verdict_from_json(const json& j, int exit_code) {
  Verdict v;
  v.category = text_of(j, "category");
  v.title = text_of(j, "title");
  v.summary = text_of(j, "summary");
  v.step = text_of(j, "step");
  v.culprit = text_of(j, "culprit");
  v.confirmation = j.value("confirmation", json());
  v.findings = findings_from_json(j.value("findings", json::array()));
  v.evidence = evidence_from_json(j.value("evidence", json::array()));
  v.reproduce = j.value("reproduce", std::vector<std::string>());
  v.advice = text_of(j, "advice");
  v.failed_steps = j.value("failed_steps", std::vector<std::string>());
  v.errored_steps = j.value("errored_steps", std::vector<std::string>());
  v.exit_code = exit_code;
  return v;
}

}  // namespace

json verdict_json(const Verdict& v) {
  return {{"category", v.category},
          {"title", v.title},
          {"summary", v.summary},
          {"step", text_or_null(v.step)},
          {"culprit", text_or_null(v.culprit)},
          {"confirmation", v.confirmation},
          {"findings", findings_json(v.findings)},
          {"evidence", evidence_json(v.evidence)},
          {"reproduce", v.reproduce},
          {"advice", v.advice},
          {"failed_steps", v.failed_steps},
          {"errored_steps", v.errored_steps}};
}

json to_json(const RunReport& report) {
  json steps = json::array();
  for (const StepReport& s : report.steps) steps.push_back(step_json(s));
  return {{"format", "diagnose-report"},
          {"version", kReportVersion},
          {"workflow", {{"name", report.workflow_name}, {"path", report.workflow_path}}},
          {"run_dir", report.run_dir},
          {"started", report.started},
          {"finished", report.finished},
          {"duration_s", report.duration_s},
          {"complete", report.complete},
          {"exit_code", report.verdict.exit_code},
          {"verdict", verdict_json(report.verdict)},
          {"steps", steps},
          {"dump_budget", report.dump_budget}};
}

RunReport run_report_from_json(const json& j) {
  if (!j.is_object() || j.value("format", json()) != "diagnose-report" || j.value("version", json()) != kReportVersion)
    throw std::runtime_error("not a report.json of format diagnose-report, version " + std::to_string(kReportVersion));
  try {
    RunReport report;
    const json workflow = j.value("workflow", json::object());
    report.workflow_name = text_of(workflow, "name");
    report.workflow_path = text_of(workflow, "path");
    report.run_dir = text_of(j, "run_dir");
    report.started = j.value("started", json());
    report.finished = j.value("finished", json());
    report.duration_s = j.value("duration_s", 0.0);
    report.complete = j.value("complete", false);
    report.verdict = verdict_from_json(j.value("verdict", json::object()), j.value("exit_code", 0));
    report.dump_budget = j.value("dump_budget", json());
    for (const json& s : j.value("steps", json::array())) report.steps.push_back(step_from_json(s));
    return report;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a malformed report.json: ") + e.what());
  }
}

}  // namespace diagnose
