#include "orchestrator/report/section_html.h"

#include <cmath>

#include "compare/json_number.h"
#include "orchestrator/report/markup.h"
#include "orchestrator/report/report_json.h"
#include "orchestrator/report/svg_plot.h"

namespace diagnose {

using nlohmann::json;
using svg::short_number;

void trend_html(HtmlWriter& html, const std::string& path, const json& document) {
  const json& points = document.value("points", json::array());
  if (!points.is_array() || points.empty()) return;
  std::string output = document.value("output", "");
  svg::Chart chart;
  chart.title = "Trend of " + (output.empty() ? std::string("the final outputs") : output) + " across model versions";
  chart.kind = "history-trend";
  chart.x_label = "model version (oldest first)";
  chart.y_label = "error";
  chart.log_y = true;
  svg::Series cosine{"1 − cosine similarity", "cosine", {}, true};
  svg::Series rel_l2{"relative L2 error", "rel-l2", {}, true};
  svg::Series max_rel{"max relative error", "max-rel", {}, true};
  json rows = json::array();
  for (size_t i = 0; i < points.size(); ++i) {
    const json& p = points[i];
    if (!p.is_object()) continue;
    std::string version = p.value("model_version", "");
    chart.x_tick_labels.push_back(clip(version, 14));
    double x = static_cast<double>(i);
    std::string cls = p.value("passed", true) ? "" : "fail";
    std::string label = version + " (" + p.value("run", "") + ")";
    double cos = compare::number_from_json(p.value("cosine_similarity", json()));
    cosine.points.push_back({x, 1 - cos, label + ": cosine " + short_number(cos), cls});
    double l2 = compare::number_from_json(p.value("relative_l2", json()));
    rel_l2.points.push_back({x, l2, label + ": relative L2 " + short_number(l2), cls});
    double mr = compare::number_from_json(p.value("max_relative_error", json()));
    max_rel.points.push_back({x, mr, label + ": max relative " + short_number(mr), cls});
    double started = compare::number_from_json(p.value("started", json()));
    rows.push_back({{"model version", version},
                    {"run", p.value("run", json())},
                    {"when", iso_time(std::isfinite(started) ? started : 0)},
                    {"verdict", p.value("passed", true) ? "pass" : "fail"},
                    {"cosine", p.value("cosine_similarity", json())},
                    {"relative L2", p.value("relative_l2", json())},
                    {"max relative", p.value("max_relative_error", json())}});
  }
  chart.series = {cosine, rel_l2, max_rel};
  html.out << "<figure class=\"trend\">\n"
           << svg::chart(chart) << "<figcaption>Worst row of each run in the history ("
           << markup_escape(document.value("database", "")) << "); from ";
  html.anchor(path, html.link(path));
  html.out << ".</figcaption>\n</figure>\n";
  html.table(rows, "trend-table", {"model version", "run", "when", "verdict", "cosine", "relative L2", "max relative"});
}

}  // namespace diagnose
