// Writing the reports of a run directory, and the terminal summary.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "orchestrator/report/run_report.h"
#include "orchestrator/report/terminal_verdict.h"

namespace diagnose {

// report.md, report.json, junit.xml and report.html (those named in `formats`) into `dir`,
// the run directory; returns the paths written. Throws std::runtime_error.
std::vector<std::string> write_reports(const RunReport& report, const std::vector<std::string>& formats,
                                       const std::string& dir);

// The verdict block (terminal_verdict.h), after a line per step when `steps` is set.
void print_terminal_summary(std::ostream& out, const RunReport& report, const std::vector<std::string>& report_paths,
                            const TerminalStyle& style, bool steps);

}  // namespace diagnose
