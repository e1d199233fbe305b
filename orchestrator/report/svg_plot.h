// Small inline SVG charts for report.html: no script, no network, readable in print.
#pragma once

#include <string>
#include <vector>

namespace diagnose::svg {

struct Point {
  double x = 0, y = 0;
  std::string tooltip;    // shown on hover (<title>)
  std::string css_class;  // "pass", "fail"...; empty: the series' class
};

struct Series {
  std::string name;       // in the legend
  std::string css_class;  // colours the line and the points
  std::vector<Point> points;
  bool line = true;  // join the points
};

// A vertical line across the plot at x.
struct Marker {
  double x = 0;
  std::string label;
  std::string css_class;
};

struct Chart {
  std::string title, x_label, y_label;
  std::string id;  // id of the <svg> element; data-chart attribute names its kind
  std::string kind;
  bool log_y = false;
  // Log scale: y values at or below this are drawn on it (exact zero has no logarithm).
  double log_floor = 1e-12;
  std::vector<Series> series;
  std::vector<Marker> markers;
  std::vector<std::string> x_tick_labels;  // when set: label of x = 0, 1, 2... (categorical axis)
  int width = 960, height = 280;
};

std::string chart(const Chart& chart);

// A number in few characters: 0.9999, 1.2e-05; as many more as it takes not to round a value
// onto a whole number it is not: 0.99999.
std::string short_number(double value);

// About how wide `text` is drawn at `font_px` in the report's sans-serif: generous, for laying
// labels out so that they neither overlap nor run off the drawing.
double text_width(const std::string& text, double font_px);

}  // namespace diagnose::svg
