// Writing the reports of a run directory, and the terminal summary.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

// report.md, report.json, junit.xml and report.html (those named in `formats`) into the run
// directory; returns the paths written. Throws std::runtime_error.
std::vector<std::string> write_reports(const State& state, const Verdict& verdict,
                                       const std::vector<std::string>& formats);

void print_terminal_summary(std::ostream& out, const State& state, const Verdict& verdict,
                            const std::vector<std::string>& report_paths);

}  // namespace diagnose
