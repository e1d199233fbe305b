#include "orchestrator/report/junit.h"

#include "orchestrator/report/markup.h"

#include <sstream>

#include "orchestrator/report/report_json.h"
#include "orchestrator/util/log_tail.h"

namespace diagnose {

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
  out << "  <testsuite name=\"" << markup_escape(state.workflow_name) << "\" tests=\"" << state.steps.size()
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
      << seconds(state.started, state.finished) << "\"";
  nlohmann::json timestamp = iso_time(state.started);
  if (timestamp.is_string()) out << " timestamp=\"" << timestamp.get<std::string>() << "\"";
  out << ">\n";
  out << "    <properties>\n      <property name=\"verdict\" value=\"" << markup_escape(verdict.category)
      << "\"/>\n      <property name=\"run_dir\" value=\"" << markup_escape(state.run_dir)
      << "\"/>\n    </properties>\n";
  for (const StepResult& s : state.steps) {
    out << "    <testcase classname=\"diagnose." << markup_escape(state.workflow_name) << "\" name=\""
        << markup_escape(s.id) << "\" time=\"" << seconds(s.started, s.finished) << "\">\n";
    std::string details;
    for (const Finding& f : s.findings) details += f.message + "\n";
    for (const RunRecord& r : s.runs) {
      if (r.status == RunStatus::Succeeded) continue;
      std::string tail = log_tail(r.stderr_path);
      if (!tail.empty()) details += "--- " + r.name + " stderr (last lines) ---\n" + tail + "\n";
    }
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
