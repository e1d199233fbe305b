#include "orchestrator/report/section_html.h"

#include <algorithm>
#include <sstream>

#include "orchestrator/report/markup.h"
#include "orchestrator/report/svg_plot.h"

namespace diagnose {

namespace {

using nlohmann::json;

// Lines of `text` no wider than `width` pixels at `font_px`: broken at spaces, and inside a
// word only where the word alone is wider.
std::vector<std::string> wrapped(const std::string& text, double width, double font_px) {
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

}  // namespace

void flowchart_html(HtmlWriter& html, const std::vector<StepReport>& steps) {
  const int box_w = 200, line_h = 17, gap_x = 44, gap_y = 40, per_row = 4, margin = 12;
  const double text_w = box_w - 20;
  // Each box: its id (bold), kind, status and condition, wrapped to the box, never cut; all
  // boxes as tall as the tallest so that the arrows meet them in the middle.
  struct Line {
    std::string css_class, text;
  };
  std::vector<std::vector<Line>> box_lines;
  size_t most_lines = 1;
  for (const StepReport& s : steps) {
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
  size_t n = steps.size();
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
  html.out << "<h2>Flowchart</h2>\n<figure id=\"flowchart\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
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
    html.out << "<path class=\"arrow\" d=\"" << path << "\"/>\n";
  }
  for (size_t i = 0; i < n; ++i) {
    const StepReport& s = steps[i];
    std::string status = status_class(step_status_name(s.status));
    int x = box_x(i), y = box_y(i);
    html.out << "<a href=\"#step-" << markup_escape(s.id) << "\"><g class=\"box " << status << "\" data-step=\""
             << markup_escape(s.id) << "\" data-status=\"" << status << "\"><title>"
             << markup_escape(s.id + ": " + s.summary) << "</title>"
             << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << box_w << "\" height=\"" << box_h
             << "\" rx=\"8\"/>";
    for (size_t l = 0; l < box_lines[i].size(); ++l)
      html.out << "<text class=\"" << box_lines[i][l].css_class << "\" x=\"" << x + 10 << "\" y=\""
               << y + 20 + line_h * static_cast<int>(l) << "\">" << markup_escape(box_lines[i][l].text) << "</text>";
    html.out << "</g></a>\n";
  }
  html.out
      << "</svg>\n<figcaption>Steps in workflow order with their status (green pass, red fail, orange error, dashed "
         "skipped); a step with a condition shows it in its box.</figcaption>\n</figure>\n";
}

}  // namespace diagnose
