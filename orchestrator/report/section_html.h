// The parts of report.html drawn from a step's sections (run_report.h) and the flowchart,
// one renderer each, writing into the page through an HtmlWriter.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/report/html_writer.h"
#include "orchestrator/report/run_report.h"

namespace diagnose {

// Steps in workflow order as boxes with their status and condition, snaking across the page.
void flowchart_html(HtmlWriter& html, const std::vector<StepReport>& steps);
// Per-op error along execution order for each rank and graph of a compare result, and its worst rows.
void compare_html(HtmlWriter& html, const std::string& path, const nlohmann::json& result);
// A bisection's conclusion, how it narrowed and (`with_table`) its trials.
void bisection_html(HtmlWriter& html, const std::string& path, const nlohmann::json& result, bool with_table);
// An output's metrics across model versions.
void trend_html(HtmlWriter& html, const std::string& path, const nlohmann::json& document);

}  // namespace diagnose
