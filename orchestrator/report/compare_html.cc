#include "orchestrator/report/section_html.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "compare/json_number.h"
#include "orchestrator/report/markup.h"
#include "orchestrator/report/report_json.h"
#include "orchestrator/report/svg_plot.h"

namespace diagnose {

namespace {

using nlohmann::json;
using svg::short_number;

// The cosine before rounding to ten places, where the result keeps it: a failing row's may round to 1.
json cosine_of(const json& row) {
  return row.contains("cosine_unrounded") ? row["cosine_unrounded"] : row.value("cosine_similarity", json());
}

void worst_rows(HtmlWriter& html, const json& rows) {
  std::vector<const json*> failing;
  for (const json& row : rows)
    if (row.is_object() && row.value("verdict", "") == "fail") failing.push_back(&row);
  if (failing.empty()) return;
  auto error_of = [](const json* row) {
    double e = compare::number_from_json(row->value("relative_euclidean_distance", json()));
    return std::isnan(e) ? INFINITY : e;
  };
  std::stable_sort(failing.begin(), failing.end(),
                   [&](const json* a, const json* b) { return error_of(a) > error_of(b); });
  json table_rows = json::array();
  for (size_t i = 0; i < failing.size() && i < 10; ++i) {
    const json& row = *failing[i];
    table_rows.push_back({{"op", row.value("op_key", "")},
                          {"io", row.value("io", "")},
                          {"index", row.value("index", json())},
                          {"data_id", row.value("data_id", json())},
                          {"dtype", row.value("my_dtype", json())},
                          {"cosine", cosine_of(row)},
                          {"relative L2", row.value("relative_euclidean_distance", json())},
                          {"max abs", row.value("max_absolute_error", json())},
                          {"judged by", row.value("judged_by", json())},
                          {"reason", row.value("cmp_fail_reason", json())}});
  }
  html.out << "<h4>Worst rows (largest relative L2 error first, of " << failing.size() << " failing)</h4>\n";
  html.table(table_rows, "worst-rows",
             {"op", "io", "index", "data_id", "dtype", "cosine", "relative L2", "max abs", "judged by", "reason"});
}

}  // namespace

void compare_html(HtmlWriter& html, const std::string& path, const json& result) {
  if (!result.contains("groups") || !result["groups"].is_array()) return;
  const json& summary = result.value("summary", json::object());
  json divergences = summary.value("divergences", json::array());
  for (const json& group : result["groups"]) {
    if (!group.is_object() || !group.contains("rows") || !group["rows"].is_array()) continue;
    const json& rows = group["rows"];
    int rank = group.value("rank", -1), graph = group.value("graph", -1);
    std::string where =
        (rank >= 0 ? "rank " + std::to_string(rank) : std::string()) +
        (graph >= 0 ? std::string(rank >= 0 ? ", " : "") + "graph " + std::to_string(graph) : std::string());
    svg::Series cosine{"1 − cosine similarity", "cosine", {}, true};
    svg::Series rel_l2{"relative L2 error", "rel-l2", {}, true};
    svg::Series max_rel{"max relative error", "max-rel", {}, true};
    std::vector<svg::Marker> markers;
    json divergence;
    for (const json& d : divergences)
      if (d.value("rank", -1) == rank && d.value("graph", -1) == graph) divergence = d;
    std::set<std::string> sources;
    if (divergence.is_object())
      for (const json& op : divergence.value("source_ops", json::array()))
        if (op.is_string()) sources.insert(op.get<std::string>());
    std::set<std::string> marked_sources;
    bool first_marked = false;
    size_t empty = 0;
    // Big dumps: keep every failing row and thin the passing ones so the page stays light.
    size_t every = std::max<size_t>(1, rows.size() / 3000);
    for (size_t i = 0; i < rows.size(); ++i) {
      const json& row = rows[i];
      if (!row.is_object()) continue;
      std::string op = row.value("op_key", std::string());
      std::string verdict = row.value("verdict", std::string());
      double x = static_cast<double>(i);
      if (divergence.is_object() && !first_marked &&
          row.value("data_id", json()) == divergence.value("first_failing_data_id", json())) {
        markers.push_back({x, "first divergence: " + op, "first-divergence"});
        first_marked = true;
      }
      if (sources.count(op) && row.value("io", "") == "output" && !marked_sources.count(op)) {
        if (!(first_marked && markers.back().x == x))
          markers.push_back({x, "source op: " + op, "source-op"});
        else
          markers.back().label += " (source op)";
        marked_sources.insert(op);
      }
      if (row.value("elements", json()) == 0) {  // no values, no error to draw
        ++empty;
        continue;
      }
      if (verdict != "fail" && i % every) continue;
      double cos = compare::number_from_json(cosine_of(row));
      std::string label = "#" + std::to_string(i) + " " + op + " " + row.value("io", "") + " " +
                          cell_text(row.value("index", json())) + " — " + verdict;
      std::string point_class = verdict == "fail" ? "fail" : "";
      cosine.points.push_back({x, 1 - cos, label + ", cosine " + short_number(cos), point_class});
      double l2 = compare::number_from_json(row.value("relative_euclidean_distance", json()));
      rel_l2.points.push_back({x, l2, label + ", relative L2 " + short_number(l2), point_class});
      double mr = compare::number_from_json(row.value("max_relative_error", json()));
      max_rel.points.push_back({x, mr, label + ", max relative " + short_number(mr), point_class});
    }
    std::string title_where = where.empty() ? "" : " (" + where + ")";
    html.out << "<figure class=\"compare-plot\">\n";
    svg::Chart similarity;
    similarity.title = "Cosine similarity along execution order" + title_where;
    similarity.kind = "compare-cosine";
    similarity.x_label = "row in execution order (" + std::to_string(rows.size()) + " rows; red points fail" +
                         (empty ? "; " + std::to_string(empty) + " empty tensors not drawn" : std::string()) + ")";
    similarity.y_label = "1 − cosine";
    similarity.log_y = true;
    similarity.series = {cosine};
    similarity.markers = markers;
    html.out << svg::chart(similarity);
    svg::Chart error = similarity;
    error.title = "Relative error along execution order" + title_where;
    error.kind = "compare-relative-error";
    error.y_label = "relative error";
    error.series = {rel_l2, max_rel};
    html.out << svg::chart(error) << "<figcaption>Per-op error of ";
    html.anchor(path, html.link(path));
    if (divergence.is_object()) {
      html.out << "; first divergence at <code class=\"first-divergence\">"
               << markup_escape(divergence.value("first_failing_op", "")) << "</code>";
      if (!sources.empty()) {
        html.out << ", error starts at";
        for (const std::string& s : sources) html.out << " <code class=\"source-op\">" << markup_escape(s) << "</code>";
      }
    }
    html.out << ". Hover a point for its op and values.</figcaption>\n</figure>\n";
    worst_rows(html, rows);
  }
  if (summary.contains("unmatched") && summary["unmatched"].is_array() && !summary["unmatched"].empty()) {
    html.out << "<h4>Not matched</h4>\n";
    html.table(summary["unmatched"]);
  }
}

}  // namespace diagnose
