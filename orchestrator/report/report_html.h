// report.html: one self-contained page per run (inline CSS and SVG, no script, no network)
// for a person deciding what to fix: the verdict with its evidence, the flowchart with each
// step's status, per-op error plots of every comparison, bisection trials and how the search
// narrowed, metric trends across model versions, relative links to logs, dumps and tables,
// and the commands that replay each result. Readable printed.
//
// It is rendered from the RunReport alone (run_report.h): the documents it draws are the
// steps' sections, read from their files once when the report was made.
#pragma once

#include <string>

#include "orchestrator/report/run_report.h"

namespace diagnose {

std::string report_html(const RunReport& report);

}  // namespace diagnose
