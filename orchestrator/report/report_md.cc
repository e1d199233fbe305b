#include "orchestrator/report/report_md.h"

#include <sstream>

#include "orchestrator/engine/dump_budget.h"

namespace diagnose {

namespace {

std::string cell(const nlohmann::json& v) {
  std::string text = v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
  std::string escaped;
  for (char c : text) escaped += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return escaped;
}

std::string seconds(const ReportedRun& run) {
  if (run.finished.is_null()) return "";
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(2);
  out << run.duration_s;
  return out.str();
}

void write_table(std::ostream& out, const nlohmann::json& rows) {
  if (!rows.is_array() || rows.empty() || !rows[0].is_object()) return;
  std::vector<std::string> columns;
  for (const auto& [key, value] : rows[0].items()) columns.push_back(key);
  out << "|";
  for (const std::string& c : columns) out << " " << c << " |";
  out << "\n|";
  for (size_t i = 0; i < columns.size(); ++i) out << "---|";
  out << "\n";
  for (const auto& row : rows) {
    out << "|";
    for (const std::string& c : columns) out << " " << cell(row.value(c, nlohmann::json())) << " |";
    out << "\n";
  }
}

void write_evidence(std::ostream& out, const std::vector<Evidence>& evidence) {
  for (const Evidence& e : evidence) {
    if (e.kind == "file") {
      out << "- " << e.name << ": `" << e.path << "`\n";
    } else if (e.kind == "metric") {
      out << "- " << e.name << " = `" << cell(e.value) << "`\n";
    } else if (e.kind == "table") {
      out << "\n" << e.name << ":\n\n";
      write_table(out, e.value);
      out << "\n";
    } else if (e.kind == "log") {
      out << "\n"
          << e.name << " (`" << e.path << "`):\n\n```\n"
          << (e.value.is_string() ? e.value.get<std::string>() : "") << "\n```\n\n";
    }
  }
}

void write_commands(std::ostream& out, const std::vector<std::string>& commands) {
  if (commands.empty()) return;
  out << "\n```sh\n";
  for (const std::string& c : commands) out << c << "\n";
  out << "```\n";
}

}  // namespace

std::string report_markdown(const RunReport& report) {
  const Verdict& verdict = report.verdict;
  std::ostringstream out;
  out << "# diagnose report: " << report.workflow_name << "\n\n";
  out << "- run directory: `" << report.run_dir << "`\n";
  out << "- workflow: `" << report.workflow_path << "`\n";
  out << "- started: " << cell(report.started)
      << ", finished: " << (report.finished.is_null() ? std::string("not finished") : cell(report.finished)) << "\n";
  out << "- exit code: " << verdict.exit_code << "\n\n";

  out << "## Verdict: " << verdict.title << "\n\n" << verdict.summary << "\n\n";
  if (!verdict.culprit.empty()) out << "Culprit: `" << verdict.culprit << "`\n\n";
  if (!verdict.advice.empty()) out << "What to do: " << verdict.advice << "\n\n";
  if (!verdict.findings.empty()) {
    out << "Findings:\n\n";
    for (const Finding& f : verdict.findings) out << "- " << f.message << "\n";
    out << "\n";
  }
  if (!verdict.evidence.empty()) {
    out << "Evidence:\n\n";
    write_evidence(out, verdict.evidence);
    out << "\n";
  }
  if (!verdict.reproduce.empty()) {
    out << "Reproduce:\n";
    write_commands(out, verdict.reproduce);
    out << "\n";
  }

  if (report.dump_budget.is_object()) {
    out << "## Dump budget\n\n" << dump_budget_text(report.dump_budget) << "\n\n";
    const nlohmann::json left_out = report.dump_budget.value("left_out", nlohmann::json::array());
    if (!left_out.empty()) {
      write_table(out, left_out);
      out << "\n";
    }
  }

  out << "## Steps\n\n| step | kind | status | summary |\n|---|---|---|---|\n";
  for (const StepReport& s : report.steps)
    out << "| " << s.id << " | " << s.kind << " | " << step_status_name(s.status) << " | " << cell(s.summary) << " |\n";
  for (const StepReport& s : report.steps) {
    out << "\n### " << s.id << " (" << s.kind << "): " << step_status_name(s.status) << "\n\n" << s.summary << "\n";
    if (!s.runs.empty()) {
      out << "\n| run | status | exit | signal | seconds | attempts |\n|---|---|---|---|---|---|\n";
      for (const ReportedRun& r : s.runs)
        out << "| " << r.name << " | " << run_status_name(r.status) << " | "
            << (r.exit_code ? std::to_string(*r.exit_code) : "") << " | " << (r.signal ? std::to_string(*r.signal) : "")
            << " | " << seconds(r) << " | " << r.attempts << " |\n";
    }
    if (!s.findings.empty()) {
      out << "\nFindings:\n\n";
      for (const Finding& f : s.findings) out << "- " << f.message << "\n";
    }
    if (!s.evidence.empty()) {
      out << "\nEvidence:\n\n";
      write_evidence(out, s.evidence);
    }
    if (!s.reproduce.empty()) {
      out << "\nReproduce:\n";
      write_commands(out, s.reproduce);
    }
  }
  return out.str();
}

}  // namespace diagnose
