#include "orchestrator/report/svg_plot.h"

#include "orchestrator/report/markup.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace diagnose::svg {

namespace {

constexpr double kLeft = 72, kRight = 16, kTop = 30, kBottom = 64;
constexpr double kFontPx = 11;  // svg text in report.html's style

std::string coordinate(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

// Round steps (1, 2, 5 x 10^k) covering [low, high] with about `count` ticks.
std::vector<double> linear_ticks(double low, double high, int count) {
  double raw = (high - low) / count;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * magnitude) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

// `text`, or as much of it as fits in `width` pixels followed by "…".
std::string fitted(const std::string& text, double width) {
  if (text_width(text, kFontPx) <= width) return text;
  std::string kept = text;
  while (!kept.empty() && text_width(kept + "…", kFontPx) > width) {
    size_t last = kept.size() - 1;
    while (last > 0 && (static_cast<unsigned char>(kept[last]) & 0xC0) == 0x80) --last;  // a whole character
    kept.erase(last);
  }
  return kept + "…";
}

}  // namespace

std::string short_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Four significant digits; more where four would round a small value onto a whole number it is
  // not (a failing row's cosine of 0.99997 must not read 1).
  char buffer[32];
  for (int digits = 4; digits <= 12; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    double shown = std::strtod(buffer, nullptr);
    if (shown == value || std::abs(shown) >= 10 || shown != std::round(shown)) break;
  }
  return buffer;
}

double text_width(const std::string& text, double font_px) {
  size_t characters = 0;
  for (unsigned char c : text) characters += (c & 0xC0) != 0x80;  // UTF-8 lead bytes
  return 0.6 * font_px * static_cast<double>(characters);
}

std::string chart(const Chart& c) {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low;
  double y_low = x_low, y_high = -x_low;
  auto shown_y = [&](double y) { return c.log_y ? std::log10(std::max(y, c.log_floor)) : y; };
  for (const Series& s : c.series)
    for (const Point& p : s.points) {
      if (!std::isfinite(p.x) || std::isnan(p.y)) continue;
      x_low = std::min(x_low, p.x);
      x_high = std::max(x_high, p.x);
      double y = std::isinf(p.y) ? (p.y > 0 ? y_high : y_low) : shown_y(p.y);
      if (!std::isfinite(y)) continue;
      y_low = std::min(y_low, y);
      y_high = std::max(y_high, y);
    }
  for (const Marker& m : c.markers) {
    x_low = std::min(x_low, m.x);
    x_high = std::max(x_high, m.x);
  }
  if (!std::isfinite(x_low)) x_low = 0, x_high = 1;
  if (!std::isfinite(y_low)) y_low = c.log_y ? std::log10(c.log_floor) : 0, y_high = y_low + 1;
  if (x_high - x_low < 1e-12) x_low -= 0.5, x_high += 0.5;
  if (c.log_y) {
    y_low = std::floor(y_low);
    y_high = std::max(std::ceil(y_high), y_low + 1);
  } else {
    if (y_high - y_low < 1e-12) y_low -= 0.5, y_high += 0.5;
    double pad = (y_high - y_low) * 0.06;
    y_low -= pad;
    y_high += pad;
  }
  double plot_w = c.width - kLeft - kRight, plot_h = c.height - kTop - kBottom;
  double x_pad = (x_high - x_low) * 0.02;
  auto px = [&](double x) { return kLeft + (x - (x_low - x_pad)) / (x_high - x_low + 2 * x_pad) * plot_w; };
  auto py = [&](double shown) { return kTop + (1 - (shown - y_low) / (y_high - y_low)) * plot_h; };

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" role=\"img\" viewBox=\"0 0 " << c.width << " "
      << c.height << "\" width=\"" << c.width << "\" height=\"" << c.height << "\"";
  if (!c.id.empty()) out << " id=\"" << markup_escape(c.id) << "\"";
  if (!c.kind.empty()) out << " data-chart=\"" << markup_escape(c.kind) << "\"";
  out << ">\n<title>" << markup_escape(c.title) << "</title>\n";
  out << "<text class=\"chart-title\" x=\"" << kLeft << "\" y=\"18\">" << markup_escape(c.title) << "</text>\n";
  out << "<rect class=\"frame\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << coordinate(plot_w)
      << "\" height=\"" << coordinate(plot_h) << "\"/>\n";

  // y axis: decades on a log scale, round steps otherwise.
  std::vector<double> y_ticks;
  if (c.log_y) {
    int decades = static_cast<int>(y_high - y_low);
    int every = std::max(1, (decades + 7) / 8);
    for (int d = static_cast<int>(y_low); d <= static_cast<int>(y_high); d += every) y_ticks.push_back(d);
  } else {
    y_ticks = linear_ticks(y_low, y_high, 5);
  }
  for (double t : y_ticks) {
    std::string label = c.log_y ? "1e" + std::to_string(static_cast<int>(t)) : short_number(t);
    out << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << coordinate(kLeft + plot_w) << "\" y1=\""
        << coordinate(py(t)) << "\" y2=\"" << coordinate(py(t)) << "\"/>"
        << "<text class=\"tick\" text-anchor=\"end\" x=\"" << kLeft - 6 << "\" y=\"" << coordinate(py(t) + 4) << "\">"
        << label << "</text>\n";
  }
  if (c.log_y)
    out << "<text class=\"note\" x=\"" << coordinate(kLeft + plot_w) << "\" y=\"" << c.height - 6
        << "\" text-anchor=\"end\">log scale; values ≤ " << short_number(c.log_floor) << " drawn at "
        << short_number(c.log_floor) << "</text>\n";

  // x axis: categorical labels (thinned to fit) or round steps.
  if (!c.x_tick_labels.empty()) {
    size_t n = c.x_tick_labels.size();
    double widest = 0;
    for (const std::string& label : c.x_tick_labels) widest = std::max(widest, text_width(label, kFontPx) + 8);
    size_t every = std::max<size_t>(1, static_cast<size_t>(std::ceil(n * widest / plot_w)));
    for (size_t i = 0; i < n; i += every)
      out << "<text class=\"tick\" text-anchor=\"middle\" x=\"" << coordinate(px(static_cast<double>(i))) << "\" y=\""
          << coordinate(kTop + plot_h + 16) << "\">" << markup_escape(c.x_tick_labels[i]) << "</text>\n";
  } else {
    bool integral = true;  // rows, versions: no ticks between them
    for (const Series& s : c.series)
      for (const Point& p : s.points) integral = integral && p.x == std::floor(p.x);
    for (double t : linear_ticks(x_low, x_high, 10))
      if (!integral || t == std::floor(t))
        out << "<text class=\"tick\" text-anchor=\"middle\" x=\"" << coordinate(px(t)) << "\" y=\""
            << coordinate(kTop + plot_h + 16) << "\">" << short_number(t) << "</text>\n";
  }
  out << "<text class=\"axis-label\" text-anchor=\"middle\" x=\"" << coordinate(kLeft + plot_w / 2) << "\" y=\""
      << coordinate(kTop + plot_h + 34) << "\">" << markup_escape(c.x_label) << "</text>\n";
  out << "<text class=\"axis-label\" text-anchor=\"middle\" transform=\"translate(14 " << coordinate(kTop + plot_h / 2)
      << ") rotate(-90)\">" << markup_escape(c.y_label) << "</text>\n";

  // A marker's label sits right of its line, or left of it near the right edge, one line lower
  // than any earlier label it would run into.
  std::vector<std::pair<double, double>> label_spans;  // left, right
  for (const Marker& m : c.markers) {
    double x = px(m.x), room_right = kLeft + plot_w - x - 3, room_left = x - 3 - kLeft;
    bool right_of_line = text_width(m.label, kFontPx) <= room_right || room_right >= room_left;
    std::string label = fitted(m.label, right_of_line ? room_right : room_left);  // all of it in the <title>
    double width = text_width(label, kFontPx);
    double left = right_of_line ? x + 3 : x - 3 - width;
    size_t line = 0;
    for (; line < label_spans.size(); ++line)
      if (left > label_spans[line].second + 4 || left + width < label_spans[line].first - 4) break;
    if (line == label_spans.size()) label_spans.emplace_back(left, left + width);
    label_spans[line] = {std::min(label_spans[line].first, left), std::max(label_spans[line].second, left + width)};
    out << "<g class=\"marker " << markup_escape(m.css_class) << "\"><line x1=\"" << coordinate(x) << "\" x2=\""
        << coordinate(x) << "\" y1=\"" << kTop << "\" y2=\"" << coordinate(kTop + plot_h) << "\"/>"
        << "<text x=\"" << coordinate(right_of_line ? x + 3 : x - 3) << "\" y=\"" << kTop + 12 + 13 * line << "\""
        << (right_of_line ? "" : " text-anchor=\"end\"") << ">" << markup_escape(label) << "</text><title>"
        << markup_escape(m.label) << "</title></g>\n";
  }

  auto point_y = [&](double y) { return std::isinf(y) ? (y > 0 ? py(y_high) : py(y_low)) : py(shown_y(y)); };
  for (const Series& s : c.series) {
    out << "<g class=\"series " << markup_escape(s.css_class) << "\" data-series=\"" << markup_escape(s.name)
        << "\">\n";
    if (s.line && s.points.size() > 1) {
      out << "<polyline points=\"";
      for (const Point& p : s.points)
        if (std::isfinite(p.x) && !std::isnan(p.y))
          out << coordinate(px(p.x)) << "," << coordinate(point_y(p.y)) << " ";
      out << "\"/>\n";
    }
    for (const Point& p : s.points) {
      if (!std::isfinite(p.x) || std::isnan(p.y)) continue;
      out << "<circle r=\"3\" cx=\"" << coordinate(px(p.x)) << "\" cy=\"" << coordinate(point_y(p.y)) << "\"";
      if (!p.css_class.empty()) out << " class=\"" << markup_escape(p.css_class) << "\"";
      out << "><title>" << markup_escape(p.tooltip) << "</title></circle>\n";
    }
    out << "</g>\n";
  }

  double legend_x = kLeft;
  for (const Series& s : c.series) {
    out << "<g class=\"legend " << markup_escape(s.css_class) << "\"><line x1=\"" << coordinate(legend_x) << "\" x2=\""
        << coordinate(legend_x + 18) << "\" y1=\"" << c.height - 10 << "\" y2=\"" << c.height - 10 << "\"/>"
        << "<text x=\"" << coordinate(legend_x + 22) << "\" y=\"" << c.height - 6 << "\">" << markup_escape(s.name)
        << "</text></g>\n";
    legend_x += 40 + text_width(s.name, kFontPx);
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace diagnose::svg
