#include "orchestrator/report/reports.h"

#include <algorithm>
#include <ostream>

#include "orchestrator/report/junit.h"
#include "orchestrator/report/report_html.h"
#include "orchestrator/report/report_md.h"

namespace diagnose {

std::vector<std::string> write_reports(const RunReport& report, const std::vector<std::string>& formats,
                                       const std::string& dir) {
  std::vector<std::string> written;
  auto wanted = [&](const char* format) { return std::find(formats.begin(), formats.end(), format) != formats.end(); };
  if (wanted("md")) {
    written.push_back(dir + "/report.md");
    write_file_atomically(written.back(), report_markdown(report));
  }
  if (wanted("json")) {
    written.push_back(dir + "/report.json");
    write_file_atomically(written.back(), to_json(report).dump(2) + "\n");
  }
  if (wanted("junit")) {
    written.push_back(dir + "/junit.xml");
    write_file_atomically(written.back(), report_junit(report));
  }
  if (wanted("html")) {
    written.push_back(dir + "/report.html");
    write_file_atomically(written.back(), report_html(report));
  }
  return written;
}

void print_terminal_summary(std::ostream& out, const RunReport& report, const std::vector<std::string>& report_paths,
                            const TerminalStyle& style, bool steps) {
  if (steps) {
    out << "\n";
    for (const StepReport& s : report.steps) {
      std::string status = step_status_name(s.status);
      std::transform(status.begin(), status.end(), status.begin(), ::toupper);
      status.resize(8, ' ');
      out << shortened("  " + status + s.id + ": " + s.summary, style.width) << "\n";
    }
    out << "\n";
  }
  out << terminal_verdict(report, report_paths, style);
}

}  // namespace diagnose
