#include "orchestrator/report/junit.h"

#include "orchestrator/report/markup.h"

#include <sstream>

namespace diagnose {

std::string report_junit(const RunReport& report) {
  size_t failures = 0, errors = 0, skipped = 0;
  for (const StepReport& s : report.steps) {
    failures += s.status == StepStatus::Fail;
    errors += s.status == StepStatus::Error || s.status == StepStatus::Pending;
    skipped += s.status == StepStatus::Skipped;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"diagnose\" tests=\"" << report.steps.size() << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  out << "  <testsuite name=\"" << markup_escape(report.workflow_name) << "\" tests=\"" << report.steps.size()
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
      << report.duration_s << "\"";
  if (report.started.is_string()) out << " timestamp=\"" << report.started.get<std::string>() << "\"";
  out << ">\n";
  out << "    <properties>\n      <property name=\"verdict\" value=\"" << markup_escape(report.verdict.category)
      << "\"/>\n      <property name=\"run_dir\" value=\"" << markup_escape(report.run_dir)
      << "\"/>\n    </properties>\n";
  for (const StepReport& s : report.steps) {
    out << "    <testcase classname=\"diagnose." << markup_escape(report.workflow_name) << "\" name=\""
        << markup_escape(s.id) << "\" time=\"" << s.duration_s << "\">\n";
    std::string details;
    for (const Finding& f : s.findings) details += f.message + "\n";
    for (const ReportedRun& r : s.runs)
      if (!r.stderr_tail.empty()) details += "--- " + r.name + " stderr (last lines) ---\n" + r.stderr_tail + "\n";
    if (s.status == StepStatus::Fail) {
      out << "      <failure message=\"" << markup_escape(s.summary) << "\" type=\"" << markup_escape(s.category)
          << "\">" << markup_escape(details) << "</failure>\n";
    } else if (s.status == StepStatus::Error || s.status == StepStatus::Pending) {
      std::string message = s.status == StepStatus::Pending ? "did not finish" : s.summary;
      out << "      <error message=\"" << markup_escape(message) << "\">" << markup_escape(details) << "</error>\n";
    } else if (s.status == StepStatus::Skipped) {
      out << "      <skipped message=\"" << markup_escape(s.summary) << "\"/>\n";
    }
    out << "      <system-out>" << markup_escape(s.summary) << "</system-out>\n";
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

}  // namespace diagnose
