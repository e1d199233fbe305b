// report.html: one self-contained page per run (inline CSS and SVG, no script, no network)
// for a person deciding what to fix: the verdict with its evidence, the flowchart with each
// step's status, per-op error plots of every comparison, bisection trials and how the search
// narrowed, metric trends across model versions, relative links to logs, dumps and tables,
// and the commands that replay each result. Readable printed.
//
// Besides State, it reads JSON files that steps leave in their directories (or name as
// evidence), recognised by content:
//   - "format": "diagnose-compare-result"  compare/result.json (docs/compare-output.md)
//   - "conclusion" + "trials"              a bisection result (bisect/bisector.h Result::to_json)
//   - "format": "diagnose-history-trend"   an output's metrics across model versions (ci/history.h)
#pragma once

#include <string>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

std::string report_html(const State& state, const Verdict& verdict);

}  // namespace diagnose
