#include "orchestrator/report/report_html.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "compare/json_number.h"
#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/report/markup.h"
#include "orchestrator/report/report_json.h"
#include "orchestrator/report/svg_plot.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
using nlohmann::json;
using svg::short_number;

constexpr size_t kMaxTableRows = 200;
constexpr size_t kVerdictFindings = 5;  // the rest are listed at the end of the page
// A table cell holding a word longer than this (a path, an op's full name) may break it anywhere.
constexpr size_t kLongWord = 32;

const char* kStyle = R"css(
:root { --pass: #1a7f37; --fail: #cf222e; --error: #bc4c00; --skipped: #6e7781; --pending: #8250df; --ink: #1f2328; --muted: #59636e; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); margin: 0 auto; max-width: 1040px; padding: 16px 24px 48px; overflow-wrap: anywhere; }
td, th { overflow-wrap: normal; } td.long { overflow-wrap: anywhere; min-width: 14em; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; } h4 { font-size: 14px; margin: 14px 0 4px; }
.meta { color: var(--muted); margin: 0; } .meta code { color: var(--ink); }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
#verdict { border: 2px solid var(--line); border-left-width: 10px; padding: 8px 16px 12px; margin: 16px 0; border-radius: 6px; }
#verdict.no_precision_problem { border-color: var(--pass); } #verdict.inconclusive { border-color: var(--error); }
#verdict.problem { border-color: var(--fail); }
.verdict-sentence { font-size: 17px; font-weight: 600; margin: 4px 0 8px; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; color: #fff; font-size: 12px; font-weight: 600; text-transform: uppercase; }
.status.pass, .status.succeeded { background: var(--pass); } .status.fail, .status.failed { background: var(--fail); }
.status.error, .status.crashed, .status.timed_out, .status.not_started, .status.missing_outputs { background: var(--error); }
.status.skipped { background: var(--skipped); } .status.pending, .status.running, .status.interrupted { background: var(--pending); }
.table-box { overflow-x: auto; margin: 6px 0 10px; }
table { border-collapse: collapse; font-size: 12px; width: 100%; }
th, td { border: 1px solid var(--line); padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.status { white-space: nowrap; }
tr.fail td { background: #ffebe9; } tr.pass td { background: #fff; } tr.crash td, tr.timeout td, tr.invalid td { background: #fff1e5; }
.step { border-top: 1px solid var(--line); padding-top: 4px; }
.note { color: var(--muted); font-size: 12px; }
ul.links { margin: 4px 0; }
ul.findings { max-height: 22em; overflow-y: auto; }
:target { scroll-margin-top: 8px; } .step:target > header, #all-findings:target h2 { background: #fff8c5; }
figure { margin: 8px 0 14px; } figcaption { color: var(--muted); font-size: 12px; }
svg.chart, svg.flowchart, svg.narrowing { max-width: 100%; height: auto; display: block; }
svg text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: var(--ink); }
svg .chart-title { font-weight: 600; font-size: 12px; } svg .note { fill: var(--muted); }
svg .frame { fill: none; stroke: #8c959f; } svg .grid { stroke: #eaeef2; }
svg .series polyline { fill: none; stroke-width: 1.4; } svg .series circle { stroke: none; }
svg .cosine polyline, svg .legend.cosine line { stroke: #0969da; } svg .cosine circle { fill: #0969da; }
svg .rel-l2 polyline, svg .legend.rel-l2 line { stroke: #8250df; } svg .rel-l2 circle { fill: #8250df; }
svg .max-rel polyline, svg .legend.max-rel line { stroke: #bf8700; stroke-dasharray: 4 2; } svg .max-rel circle { fill: #bf8700; }
svg .series circle.fail { fill: var(--fail); } svg .legend line { stroke-width: 3; }
svg .marker line { stroke-width: 1.5; } svg .marker.first-divergence line { stroke: var(--fail); stroke-dasharray: 5 3; }
svg .marker.first-divergence text { fill: var(--fail); font-weight: 600; }
svg .marker.source-op line { stroke: #bc4c00; } svg .marker.source-op text { fill: #bc4c00; }
svg .box rect { stroke: #8c959f; stroke-width: 1.2; fill: #fff; }
svg .box.pass rect { fill: #dafbe1; stroke: var(--pass); } svg .box.fail rect { fill: #ffebe9; stroke: var(--fail); stroke-width: 2.5; }
svg .box.error rect { fill: #fff1e5; stroke: var(--error); stroke-width: 2.5; }
svg .box.skipped rect { fill: #f6f8fa; stroke: var(--skipped); stroke-dasharray: 5 3; } svg .box.pending rect { fill: #fbefff; stroke: var(--pending); }
svg .box .id { font-weight: 600; font-size: 12px; } svg .box .kind, svg .when { fill: var(--muted); }
svg .arrow { stroke: #57606a; stroke-width: 1.4; fill: none; marker-end: url(#arrowhead); }
svg .cell.on.pass { fill: var(--pass); } svg .cell.on.fail { fill: var(--fail); } svg .cell.on.other { fill: var(--error); }
svg .cell.off { fill: #eaeef2; } svg .culprit-column { fill: #fff8c5; } svg .culprit-label { font-weight: 700; fill: var(--fail); }
@page { size: A4; margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  figure, table, .step > header, #verdict, svg { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
  ul.links a[href]::after { content: " (" attr(href) ")"; font-size: 8pt; color: var(--muted); }
  pre { white-space: pre-wrap; }
  ul.findings { max-height: none; overflow: visible; }
  .table-box { overflow: visible; }
}
)css";

std::string status_class(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name;
}

std::string cell_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  if (value.is_number_float()) return short_number(value.get<double>());
  if (value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); })) {
    std::string joined;
    for (const auto& v : value) joined += (joined.empty() ? "" : ", ") + v.get<std::string>();
    return joined;
  }
  return value.dump();
}

// A column name may break after its underscores (rows_compared), so that it is not what widens the table.
std::string header_text(const std::string& name) {
  std::string escaped = markup_escape(name), out;
  for (char c : escaped) out += c == '_' ? std::string("_<wbr>") : std::string(1, c);
  return out;
}

size_t longest_word(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = std::isspace(static_cast<unsigned char>(c)) ? 0 : run + 1;
    longest = std::max(longest, run);
  }
  return longest;
}

class Page {
 public:
  explicit Page(const RunReport& report) : report_(report), verdict_(report.verdict) {}

  std::string render() {
    out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         << "<title>diagnose: " << markup_escape(report_.workflow_name) << " — " << markup_escape(verdict_.title)
         << "</title>\n"
         << "<style>" << kStyle << "</style>\n</head>\n<body>\n";
    header();
    verdict();
    flowchart();
    dump_budget();
    out_ << "<h2 id=\"steps\">Steps</h2>\n";
    for (const StepReport& step : report_.steps) step_section(step);
    if (verdict_.findings.size() > kVerdictFindings) {
      out_ << "<section id=\"all-findings\">\n<h2>All findings of the verdict (" << verdict_.findings.size()
           << ")</h2>\n";
      findings(verdict_.findings);
      out_ << "</section>\n";
    }
    out_ << "</body>\n</html>\n";
    return out_.str();
  }

 private:
  // Links are relative to the run directory, where report.html lives.
  std::string link(const std::string& path) const {
    if (path.empty()) return "";
    fs::path target = fs::path(path).lexically_normal();
    if (!target.is_absolute()) target = (fs::path(report_.run_dir) / target).lexically_normal();
    fs::path relative = target.lexically_relative(fs::path(report_.run_dir).lexically_normal());
    return relative.empty() ? target.string() : relative.generic_string();
  }

  void anchor(const std::string& path, const std::string& text) {
    out_ << "<a href=\"" << markup_escape(link(path)) << "\">" << markup_escape(text) << "</a>";
  }

  void header() {
    out_ << "<header>\n<h1>diagnose report: " << markup_escape(report_.workflow_name)
         << "</h1>\n<p class=\"meta\">run <code>" << markup_escape(report_.run_dir)
         << "</code> · workflow <a href=\"workflow.yaml\"><code>" << markup_escape(report_.workflow_path)
         << "</code></a> · started " << markup_escape(cell_text(report_.started)) << " · "
         << (report_.finished.is_null() ? std::string("not finished")
                                        : "finished " + markup_escape(cell_text(report_.finished)))
         << (report_.duration_s > 0 ? " (" + short_number(report_.duration_s) + " s)" : std::string())
         << " · exit code <strong id=\"exit-code\">" << verdict_.exit_code << "</strong></p>\n</header>\n";
  }

  void dump_budget() {
    if (!report_.dump_budget.is_object()) return;
    out_ << "<section id=\"dump-budget\">\n<h2>Dump budget</h2>\n<p>"
         << markup_escape(dump_budget_text(report_.dump_budget)) << "</p>\n";
    const json left_out = report_.dump_budget.value("left_out", json::array());
    if (!left_out.empty()) table(left_out, "left-out");
    out_ << "</section>\n";
  }

  void verdict() {
    std::string kind = verdict_.category == "no_precision_problem" || verdict_.category == "inconclusive"
                           ? verdict_.category
                           : "problem";
    out_ << "<section id=\"verdict\" class=\"" << kind << "\" data-category=\"" << markup_escape(verdict_.category)
         << "\">\n"
         << "<h2>Verdict: " << markup_escape(verdict_.title) << "</h2>\n<p class=\"verdict-sentence\">"
         << markup_escape(verdict_.summary) << "</p>\n";
    if (!verdict_.step.empty())
      out_ << "<p>Decided by step <a href=\"#step-" << markup_escape(verdict_.step) << "\">"
           << markup_escape(verdict_.step) << "</a>"
           << (verdict_.culprit.empty()
                   ? ""
                   : "; culprit <code class=\"culprit\">" + markup_escape(verdict_.culprit) + "</code>")
           << ".</p>\n";
    if (!verdict_.advice.empty())
      out_ << "<p><strong>What to do:</strong> " << markup_escape(verdict_.advice) << "</p>\n";
    findings(verdict_.findings, kVerdictFindings);
    if (size_t more = verdict_.findings.size() > kVerdictFindings ? verdict_.findings.size() - kVerdictFindings : 0)
      out_ << "<p class=\"more-findings\"><a href=\"#all-findings\">" << more << " more finding"
           << (more == 1 ? "" : "s") << "</a> (" << verdict_.findings.size() << " in all)</p>\n";
    if (!verdict_.evidence.empty()) {
      out_ << "<h4>Evidence</h4>\n";
      evidence(verdict_.evidence);
    }
    commands("Reproduce", verdict_.reproduce);
    out_ << "</section>\n";
  }

  void flowchart() {
    const int box_w = 200, line_h = 17, gap_x = 44, gap_y = 40, per_row = 4, margin = 12;
    const double text_w = box_w - 20;
    // Each box: its id (bold), kind, status and condition, wrapped to the box, never cut; all
    // boxes as tall as the tallest so that the arrows meet them in the middle.
    struct Line {
      std::string css_class, text;
    };
    std::vector<std::vector<Line>> box_lines;
    size_t most_lines = 1;
    for (const StepReport& s : report_.steps) {
      std::vector<Line> lines;
      for (const std::string& l : wrapped(s.id, text_w, 13)) lines.push_back({"id", l});
      for (const std::string& l : wrapped(s.kind, text_w, 11)) lines.push_back({"kind", l});
      lines.push_back({"state", status_class(step_status_name(s.status))});
      if (!s.when.empty())
        for (const std::string& l : wrapped("when " + s.when, text_w, 11)) lines.push_back({"when", l});
      most_lines = std::max(most_lines, lines.size());
      box_lines.push_back(std::move(lines));
    }
    const int box_h = line_h * static_cast<int>(most_lines) + 15;
    size_t n = report_.steps.size();
    int rows = static_cast<int>((n + per_row - 1) / per_row);
    int width = margin * 2 + per_row * box_w + (per_row - 1) * gap_x;
    int height = margin * 2 + std::max(1, rows) * (box_h + gap_y) - gap_y;
    // Boxes snake left-to-right, then right-to-left, so every arrow is short.
    auto box_x = [&](size_t i) {
      size_t row = i / per_row, column = i % per_row;
      if (row % 2) column = per_row - 1 - column;
      return margin + static_cast<int>(column) * (box_w + gap_x);
    };
    auto box_y = [&](size_t i) { return margin + static_cast<int>(i / per_row) * (box_h + gap_y); };
    out_ << "<h2>Flowchart</h2>\n<figure id=\"flowchart\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
            "class=\"flowchart\" "
            "role=\"img\" viewBox=\"0 0 "
         << width << " " << height << "\" width=\"" << width << "\" height=\"" << height
         << "\">\n<title>Flowchart: " << n
         << " steps</title>\n<defs><marker id=\"arrowhead\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
            "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" "
            "fill=\"#57606a\"/></marker></defs>\n";
    for (size_t i = 0; i + 1 < n; ++i) {
      int x1 = box_x(i), y1 = box_y(i), x2 = box_x(i + 1), y2 = box_y(i + 1);
      std::string path;
      if (y1 == y2) {
        bool right = x2 > x1;
        int from = right ? x1 + box_w : x1, to = right ? x2 : x2 + box_w;
        path = "M" + std::to_string(from) + "," + std::to_string(y1 + box_h / 2) + " L" + std::to_string(to) + "," +
               std::to_string(y2 + box_h / 2);
      } else {
        path = "M" + std::to_string(x1 + box_w / 2) + "," + std::to_string(y1 + box_h) + " L" +
               std::to_string(x2 + box_w / 2) + "," + std::to_string(y2);
      }
      out_ << "<path class=\"arrow\" d=\"" << path << "\"/>\n";
    }
    for (size_t i = 0; i < n; ++i) {
      const StepReport& s = report_.steps[i];
      std::string status = status_class(step_status_name(s.status));
      int x = box_x(i), y = box_y(i);
      out_ << "<a href=\"#step-" << markup_escape(s.id) << "\"><g class=\"box " << status << "\" data-step=\""
           << markup_escape(s.id) << "\" data-status=\"" << status << "\"><title>"
           << markup_escape(s.id + ": " + s.summary) << "</title>"
           << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << box_w << "\" height=\"" << box_h
           << "\" rx=\"8\"/>";
      for (size_t l = 0; l < box_lines[i].size(); ++l)
        out_ << "<text class=\"" << box_lines[i][l].css_class << "\" x=\"" << x + 10 << "\" y=\""
             << y + 20 + line_h * static_cast<int>(l) << "\">" << markup_escape(box_lines[i][l].text) << "</text>";
      out_ << "</g></a>\n";
    }
    out_ << "</svg>\n<figcaption>Steps in workflow order with their status (green pass, red fail, orange error, dashed "
            "skipped); a step with a condition shows it in its box.</figcaption>\n</figure>\n";
  }

  // Lines of `text` no wider than `width` pixels at `font_px`: broken at spaces, and inside a
  // word only where the word alone is wider.
  static std::vector<std::string> wrapped(const std::string& text, double width, double font_px) {
    std::vector<std::string> lines;
    std::string line;
    auto fits = [&](const std::string& t) { return svg::text_width(t, font_px) <= width; };
    std::istringstream words(text);
    for (std::string word; words >> word;) {
      std::string joined = line.empty() ? word : line + " " + word;
      if (fits(joined)) {
        line = joined;
        continue;
      }
      if (!line.empty()) lines.push_back(line);
      line.clear();
      for (size_t at = 0; at < word.size();) {  // by characters, never inside one
        size_t next = at + 1;
        while (next < word.size() && (static_cast<unsigned char>(word[next]) & 0xC0) == 0x80) ++next;
        if (!line.empty() && !fits(line + word.substr(at, next - at))) {
          lines.push_back(line);
          line.clear();
        }
        line += word.substr(at, next - at);
        at = next;
      }
    }
    if (!line.empty() || lines.empty()) lines.push_back(line);
    return lines;
  }

  static std::string clip(const std::string& text, size_t limit) {
    return text.size() <= limit ? text : text.substr(0, limit - 1) + "…";
  }

  void findings(const std::vector<Finding>& list, size_t limit = SIZE_MAX) {
    if (list.empty()) return;
    out_ << "<ul class=\"findings\">\n";
    for (size_t i = 0; i < list.size() && i < limit; ++i) out_ << "<li>" << markup_escape(list[i].message) << "</li>\n";
    out_ << "</ul>\n";
  }

  void commands(const std::string& title, const std::vector<std::string>& list) {
    if (list.empty()) return;
    out_ << "<h4>" << markup_escape(title) << "</h4>\n<pre class=\"replay\">";
    for (const std::string& c : list) out_ << markup_escape(c) << "\n";
    out_ << "</pre>\n";
  }

  // `columns`: those that come first, where the rows have them (a JSON object's keys come
  // sorted); the rest follow.
  void table(const json& rows, const std::string& css_class = "", std::vector<std::string> columns = {}) {
    if (!rows.is_array() || rows.empty() || !rows[0].is_object()) return;
    columns.erase(std::remove_if(columns.begin(), columns.end(),
                                 [&](const std::string& c) {
                                   return std::none_of(rows.begin(), rows.end(),
                                                       [&](const json& row) { return row.contains(c); });
                                 }),
                  columns.end());
    for (const auto& row : rows)
      for (const auto& [key, value] : row.items())
        if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    out_ << "<div class=\"table-box\"><table" << (css_class.empty() ? "" : " class=\"" + css_class + "\"") << ">\n<tr>";
    for (const std::string& c : columns) out_ << "<th>" << header_text(c) << "</th>";
    out_ << "</tr>\n";
    size_t shown = std::min(rows.size(), kMaxTableRows);
    for (size_t i = 0; i < shown; ++i) {
      const json& row = rows[i];
      std::string row_class;
      for (const char* key : {"verdict", "outcome", "status"})
        if (row.contains(key) && row[key].is_string()) row_class = status_class(row[key].get<std::string>());
      out_ << "<tr" << (row_class.empty() ? "" : " class=\"" + markup_escape(row_class) + "\"") << ">";
      for (const std::string& c : columns) {
        json value = row.value(c, json());
        std::string text = cell_text(value);
        out_ << "<td"
             << (value.is_number()                ? " class=\"num\""
                 : longest_word(text) > kLongWord ? " class=\"long\""
                                                  : "")
             << ">" << markup_escape(text) << "</td>";
      }
      out_ << "</tr>\n";
    }
    out_ << "</table></div>\n";
    if (rows.size() > shown) out_ << "<p class=\"note\">" << rows.size() - shown << " more rows not shown.</p>\n";
  }

  void evidence(const std::vector<Evidence>& list) {
    std::vector<const Evidence*> files, metrics;
    for (const Evidence& e : list) {
      if (e.kind == "file")
        files.push_back(&e);
      else if (e.kind == "metric")
        metrics.push_back(&e);
    }
    if (!files.empty()) {
      out_ << "<ul class=\"links\">\n";
      for (const Evidence* e : files) {
        out_ << "<li>" << markup_escape(e->name) << ": ";
        anchor(e->path, link(e->path));
        out_ << "</li>\n";
      }
      out_ << "</ul>\n";
    }
    if (!metrics.empty()) {
      out_ << "<ul class=\"metrics\">\n";
      for (const Evidence* e : metrics)
        out_ << "<li>" << markup_escape(e->name) << " = <code>" << markup_escape(cell_text(e->value))
             << "</code></li>\n";
      out_ << "</ul>\n";
    }
    for (const Evidence& e : list) {
      if (e.kind == "table") {
        out_ << "<h4>" << markup_escape(e.name) << "</h4>\n";
        table(e.value, "evidence");
      } else if (e.kind == "log") {
        out_ << "<h4>" << markup_escape(e.name) << " (";
        anchor(e.path, link(e.path));
        out_ << ")</h4>\n<pre class=\"log\">" << markup_escape(e.value.is_string() ? e.value.get<std::string>() : "")
             << "</pre>\n";
      } else if (e.kind != "file" && e.kind != "metric") {
        out_ << "<h4>" << markup_escape(e.name) << " (" << markup_escape(e.kind) << ")</h4>\n<pre>"
             << markup_escape(e.value.dump(2)) << "</pre>\n";
      }
    }
  }

  void runs(const StepReport& step) {
    if (step.runs.empty()) return;
    out_ << "<div class=\"table-box\"><table "
            "class=\"runs\">\n<tr><th>run</th><th>status</th><th>exit</th><th>seconds</th><th>attempts</th>"
            "<th>files</th><th>why</th></tr>\n";
    for (const ReportedRun& r : step.runs) {
      std::string status = status_class(run_status_name(r.status));
      out_ << "<tr><td>" << markup_escape(r.name);
      if (!r.from_step.empty())
        out_ << " <span class=\"note\">shared with step " << markup_escape(r.from_step) << "</span>";
      out_ << "</td><td><span class=\"status " << status << "\">" << status << "</span></td><td class=\"num\">"
           << (r.exit_code ? std::to_string(*r.exit_code)
               : r.signal  ? "signal " + std::to_string(*r.signal)
                           : "")
           << "</td><td class=\"num\">" << (r.finished.is_null() ? "" : short_number(r.duration_s))
           << "</td><td class=\"num\">" << r.attempts << "</td><td>";
      std::vector<std::pair<std::string, std::string>> files = {{"stdout", r.stdout_path}, {"stderr", r.stderr_path}};
      if (r.dump_kept) files.push_back({"dump", r.dump_dir});
      bool first = true;
      for (const auto& [name, path] : files) {
        if (path.empty()) continue;
        if (!first) out_ << " · ";
        anchor(path, name);
        first = false;
      }
      out_ << "</td><td>" << markup_escape(r.error) << "</td></tr>\n";
    }
    out_ << "</table></div>\n";
  }

  void metrics_list(const StepReport& step) {
    if (!step.metrics.is_object() || step.metrics.empty()) return;
    out_ << "<p class=\"metrics\">";
    bool first = true;
    for (const auto& [key, value] : step.metrics.items()) {
      bool table_like =
          value.is_array() && std::any_of(value.begin(), value.end(), [](const json& v) { return v.is_structured(); });
      if (value.is_object() || table_like || (value.is_array() && value.size() > 8)) continue;
      out_ << (first ? "" : " · ") << "<code>" << markup_escape(key) << "</code> = " << markup_escape(cell_text(value));
      first = false;
    }
    out_ << "</p>\n";
  }

  void step_section(const StepReport& step) {
    std::string status = status_class(step_status_name(step.status));
    out_ << "<section class=\"step\" id=\"step-" << markup_escape(step.id) << "\" data-kind=\""
         << markup_escape(step.kind) << "\" data-status=\"" << status << "\">\n<header><h3>" << markup_escape(step.id)
         << " <span class=\"note\">(" << markup_escape(step.kind) << ")</span> <span class=\"status " << status << "\">"
         << status << "</span></h3>\n<p>" << markup_escape(step.summary) << "</p></header>\n";
    metrics_list(step);
    findings(step.findings);
    runs(step);
    for (const ReportSection& section : step.sections) {
      switch (section.kind) {
        case ReportSection::Kind::Compare: compare_plots(section.path, section.document); break;
        case ReportSection::Kind::Bisection: bisection(section.path, section.document, !has_trial_table(step)); break;
        case ReportSection::Kind::Trend: trend(section.path, section.document); break;
      }
    }
    evidence(step.evidence);
    commands("Replay", step.reproduce);
    out_ << "</section>\n";
  }

  void compare_plots(const std::string& path, const json& result) {
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
      out_ << "<figure class=\"compare-plot\">\n";
      svg::Chart similarity;
      similarity.title = "Cosine similarity along execution order" + title_where;
      similarity.kind = "compare-cosine";
      similarity.x_label = "row in execution order (" + std::to_string(rows.size()) + " rows; red points fail" +
                           (empty ? "; " + std::to_string(empty) + " empty tensors not drawn" : std::string()) + ")";
      similarity.y_label = "1 − cosine";
      similarity.log_y = true;
      similarity.series = {cosine};
      similarity.markers = markers;
      out_ << svg::chart(similarity);
      svg::Chart error = similarity;
      error.title = "Relative error along execution order" + title_where;
      error.kind = "compare-relative-error";
      error.y_label = "relative error";
      error.series = {rel_l2, max_rel};
      out_ << svg::chart(error) << "<figcaption>Per-op error of ";
      anchor(path, link(path));
      if (divergence.is_object()) {
        out_ << "; first divergence at <code class=\"first-divergence\">"
             << markup_escape(divergence.value("first_failing_op", "")) << "</code>";
        if (!sources.empty()) {
          out_ << ", error starts at";
          for (const std::string& s : sources) out_ << " <code class=\"source-op\">" << markup_escape(s) << "</code>";
        }
      }
      out_ << ". Hover a point for its op and values.</figcaption>\n</figure>\n";
      worst_rows(rows);
    }
    if (summary.contains("unmatched") && summary["unmatched"].is_array() && !summary["unmatched"].empty()) {
      out_ << "<h4>Not matched</h4>\n";
      table(summary["unmatched"]);
    }
  }

  // The cosine before rounding to ten places, where the result keeps it: a failing row's may round to 1.
  static json cosine_of(const json& row) {
    return row.contains("cosine_unrounded") ? row["cosine_unrounded"] : row.value("cosine_similarity", json());
  }

  void worst_rows(const json& rows) {
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
    out_ << "<h4>Worst rows (largest relative L2 error first, of " << failing.size() << " failing)</h4>\n";
    table(table_rows, "worst-rows",
          {"op", "io", "index", "data_id", "dtype", "cosine", "relative L2", "max abs", "judged by", "reason"});
  }

  // A step that lists its trials as evidence already (fusion_bisect does) needs no second table.
  static bool has_trial_table(const StepReport& step) {
    return std::any_of(step.evidence.begin(), step.evidence.end(), [](const Evidence& e) {
      return e.kind == "table" && e.name.find("trial") != std::string::npos;
    });
  }

  void bisection(const std::string& path, const json& result, bool with_table) {
    const json& trials = result["trials"];
    out_ << "<div class=\"bisection\">\n<h4>Bisection: " << markup_escape(result.value("conclusion", ""))
         << "</h4>\n<p>" << markup_escape(result.value("summary", "")) << "</p>\n";
    std::vector<std::string> culprits;
    for (const json& set : result.value("culprit_sets", json::array()))
      for (const json& rule : set.value("rules", json::array()))
        if (rule.is_string()) culprits.push_back(rule.get<std::string>());
    if (!culprits.empty()) {
      out_ << "<p>Culprit rule(s):";
      for (const std::string& c : culprits) out_ << " <code class=\"culprit\">" << markup_escape(c) << "</code>";
      out_ << " · confidence " << markup_escape(result.value("confidence", ""))
           << (result.value("verified", false) ? ", verified" : "") << "</p>\n";
    }
    // Candidates: as the bisection lists them, else every rule any trial switched off.
    std::vector<std::string> rules;
    for (const json& r : result.value("candidates", json::array()))
      if (r.is_string()) rules.push_back(r.get<std::string>());
    if (rules.empty()) {
      std::set<std::string> all;
      for (const json& t : trials)
        for (const json& r : t.value("off", json::array()))
          if (r.is_string()) all.insert(r.get<std::string>());
      for (const std::string& c : culprits) all.insert(c);
      rules.assign(all.begin(), all.end());
    }
    narrowing(trials, rules, culprits);
    if (!with_table) {
      out_ << "<p class=\"note\">From ";
      anchor(path, link(path));
      out_ << "; the trials are listed below.</p>\n</div>\n";
      return;
    }
    json table_rows = json::array();
    for (size_t i = 0; i < trials.size(); ++i) {
      const json& t = trials[i];
      if (!t.is_object()) continue;
      json off = t.value("off", json::array());
      json row = {{"#", i + 1},
                  {"round", t.value("round", json())},
                  {"phase", t.value("phase", json())},
                  {"rules off", off.size() == rules.size() && !rules.empty() ? json("all") : off},
                  {"outcome", t.value("outcome", json())},
                  {"seconds", t.value("duration_s", json())}};
      if (t.value("replayed", false)) row["replayed"] = "yes";
      if (!t.value("detail", std::string()).empty()) row["detail"] = t["detail"];
      table_rows.push_back(row);
    }
    out_ << "<h4>Trials</h4>\n";
    table(table_rows, "trials", {"#", "round", "phase", "rules off", "outcome", "seconds", "replayed", "detail"});
    out_ << "<p class=\"note\">From ";
    anchor(path, link(path));
    out_ << ".</p>\n</div>\n";
  }

  // One row per trial, one column per candidate rule: a filled cell is a rule left on, coloured
  // by the trial's outcome; the columns still filled in failing rows show where the search narrowed.
  void narrowing(const json& trials, const std::vector<std::string>& rules, const std::vector<std::string>& culprits) {
    if (rules.empty() || trials.empty()) return;
    const size_t label_chars = 40;
    double longest = 0;  // rule label, drawn at 60 degrees: it rises 0.87 and runs right 0.5 of its length
    for (const std::string& rule : rules) longest = std::max(longest, svg::text_width(clip(rule, label_chars), 11));
    const int cell_w = std::max(10, std::min(40, 640 / static_cast<int>(rules.size()))), cell_h = 14, left = 150,
              top = static_cast<int>(0.87 * longest) + 20, legend = 28;
    int width = std::max(430, left + cell_w * static_cast<int>(rules.size()) + static_cast<int>(0.5 * longest) + 16);
    int height = top + cell_h * static_cast<int>(trials.size()) + legend;
    out_ << "<figure class=\"narrowing-figure\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"narrowing\" "
            "data-chart=\"bisection-narrowing\" role=\"img\" viewBox=\"0 0 "
         << width << " " << height << "\" width=\"" << width << "\" height=\"" << height
         << "\">\n<title>How the bisection narrowed</title>\n";
    for (size_t c = 0; c < rules.size(); ++c) {
      bool culprit = std::find(culprits.begin(), culprits.end(), rules[c]) != culprits.end();
      int x = left + static_cast<int>(c) * cell_w;
      if (culprit)
        out_ << "<rect class=\"culprit-column\" x=\"" << x << "\" y=\"" << top - 4 << "\" width=\"" << cell_w
             << "\" height=\"" << cell_h * static_cast<int>(trials.size()) + 8 << "\"/>\n";
      out_ << "<text" << (culprit ? " class=\"culprit-label\"" : "") << " transform=\"translate(" << x + cell_w / 2 + 4
           << " " << top - 8 << ") rotate(-60)\">" << markup_escape(clip(rules[c], label_chars))
           << (rules[c].size() > label_chars ? "<title>" + markup_escape(rules[c]) + "</title>" : "") << "</text>\n";
    }
    for (size_t i = 0; i < trials.size(); ++i) {
      const json& t = trials[i];
      if (!t.is_object()) continue;
      std::set<std::string> off;
      for (const json& r : t.value("off", json::array()))
        if (r.is_string()) off.insert(r.get<std::string>());
      std::string outcome = t.value("outcome", "");
      std::string outcome_class = outcome == "pass" || outcome == "fail" ? outcome : "other";
      int y = top + static_cast<int>(i) * cell_h;
      out_ << "<g class=\"trial\" data-outcome=\"" << markup_escape(outcome) << "\"><title>trial " << i + 1 << " ("
           << markup_escape(t.value("phase", "")) << ", round " << t.value("round", 0) << "): " << off.size()
           << " rule(s) off → " << markup_escape(outcome) << "</title><text x=\"4\" y=\"" << y + 11 << "\">" << i + 1
           << ". " << markup_escape(clip(t.value("phase", ""), 8)) << " → " << markup_escape(outcome) << "</text>";
      for (size_t c = 0; c < rules.size(); ++c)
        out_ << "<rect class=\"cell " << (off.count(rules[c]) ? "off" : "on " + outcome_class) << "\" x=\""
             << left + static_cast<int>(c) * cell_w + 1 << "\" y=\"" << y + 1 << "\" width=\"" << cell_w - 2
             << "\" height=\"" << cell_h - 2 << "\"/>";
      out_ << "</g>\n";
    }
    int ly = height - 10;
    out_ << "<rect class=\"cell on pass\" x=\"4\" y=\"" << ly - 9
         << "\" width=\"10\" height=\"10\"/><text x=\"18\" y=\"" << ly
         << "\">rule on, trial passed</text><rect class=\"cell on fail\" x=\"150\" y=\"" << ly - 9
         << "\" width=\"10\" height=\"10\"/><text x=\"164\" y=\"" << ly
         << "\">rule on, trial failed</text><rect class=\"cell off\" x=\"290\" y=\"" << ly - 9
         << "\" width=\"10\" height=\"10\"/><text x=\"304\" y=\"" << ly << "\">rule switched off</text>\n</svg>\n"
         << "<figcaption>How the search narrowed: each row is a trial (top first), each column a candidate rule; "
            "culprit columns are highlighted.</figcaption>\n</figure>\n";
  }

  void trend(const std::string& path, const json& document) {
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
    out_ << "<figure class=\"trend\">\n"
         << svg::chart(chart) << "<figcaption>Worst row of each run in the history ("
         << markup_escape(document.value("database", "")) << "); from ";
    anchor(path, link(path));
    out_ << ".</figcaption>\n</figure>\n";
    table(rows, "trend-table", {"model version", "run", "when", "verdict", "cosine", "relative L2", "max relative"});
  }

  const RunReport& report_;
  const Verdict& verdict_;
  std::ostringstream out_;
};

}  // namespace

std::string report_html(const RunReport& report) { return Page(report).render(); }

}  // namespace diagnose
