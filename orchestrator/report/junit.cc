#include "orchestrator/report/junit.h"

#include <sstream>

#include "orchestrator/report/report_json.h"
#include "orchestrator/exec/subprocess.h"

namespace diagnose {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n':
      case '\t':
      case '\r': out += static_cast<char>(c); break;
      default:
        // Control characters are not allowed in XML 1.0, even escaped.
        if (c >= 0x20) out += static_cast<char>(c);
        else out += "?";
    }
  }
  return out;
}

std::string report_junit(const State& state, const Verdict& verdict) {
  size_t failures = 0, errors = 0, skipped = 0;
  for (const StepResult& s : state.steps) {
    failures += s.status == StepStatus::Fail;
    errors += s.status == StepStatus::Error || s.status == StepStatus::Pending;
    skipped += s.status == StepStatus::Skipped;
  }
  auto seconds = [](double started, double finished) {
    return started > 0 && finished >= started ? finished - started : 0.0;
  };
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"diagnose\" tests=\"" << state.steps.size() << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  out << "  <testsuite name=\"" << xml_escape(state.workflow_name) << "\" tests=\"" << state.steps.size()
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
      << seconds(state.started, state.finished) << "\"";
  nlohmann::json timestamp = iso_time(state.started);
  if (timestamp.is_string()) out << " timestamp=\"" << timestamp.get<std::string>() << "\"";
  out << ">\n";
  out << "    <properties>\n      <property name=\"verdict\" value=\"" << xml_escape(verdict.category)
      << "\"/>\n      <property name=\"run_dir\" value=\"" << xml_escape(state.run_dir) << "\"/>\n    </properties>\n";
  for (const StepResult& s : state.steps) {
    out << "    <testcase classname=\"diagnose." << xml_escape(state.workflow_name) << "\" name=\"" << xml_escape(s.id)
        << "\" time=\"" << seconds(s.started, s.finished) << "\">\n";
    std::string details;
    for (const Finding& f : s.findings) details += f.message + "\n";
    for (const RunRecord& r : s.runs) {
      if (r.status == RunStatus::Succeeded) continue;
      std::string tail = log_tail(r.stderr_path);
      if (!tail.empty()) details += "--- " + r.name + " stderr (last lines) ---\n" + tail + "\n";
    }
    if (s.status == StepStatus::Fail) {
      out << "      <failure message=\"" << xml_escape(s.summary) << "\" type=\"" << xml_escape(s.category) << "\">"
          << xml_escape(details) << "</failure>\n";
    } else if (s.status == StepStatus::Error || s.status == StepStatus::Pending) {
      std::string message = s.status == StepStatus::Pending ? "did not finish" : s.summary;
      out << "      <error message=\"" << xml_escape(message) << "\">" << xml_escape(details) << "</error>\n";
    } else if (s.status == StepStatus::Skipped) {
      out << "      <skipped message=\"" << xml_escape(s.summary) << "\"/>\n";
    }
    out << "      <system-out>" << xml_escape(s.summary) << "</system-out>\n";
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

}  // namespace diagnose
