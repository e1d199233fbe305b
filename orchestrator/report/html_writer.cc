#include "orchestrator/report/html_writer.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <cctype>
#include <cmath>

#include "orchestrator/report/markup.h"
#include "orchestrator/report/svg_plot.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

constexpr size_t kMaxTableRows = 200;
// A table cell holding a word longer than this (a path, an op's full name) may break it anywhere.
constexpr size_t kLongWord = 32;

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

}  // namespace

std::string status_class(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name;
}

std::string cell_text(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  if (value.is_number_float()) return svg::short_number(value.get<double>());
  if (value.is_array() && std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); })) {
    std::string joined;
    for (const auto& v : value) joined += (joined.empty() ? "" : ", ") + v.get<std::string>();
    return joined;
  }
  return value.dump();
}

std::string clip(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : text.substr(0, limit - 1) + "…";
}

std::string HtmlWriter::link(const std::string& path) const {
  if (path.empty()) return "";
  fs::path target = fs::path(path).lexically_normal();
  if (!target.is_absolute()) target = (fs::path(run_dir_) / target).lexically_normal();
  fs::path relative = target.lexically_relative(fs::path(run_dir_).lexically_normal());
  return relative.empty() ? target.string() : relative.generic_string();
}

void HtmlWriter::anchor(const std::string& path, const std::string& text) {
  out << "<a href=\"" << markup_escape(link(path)) << "\">" << markup_escape(text) << "</a>";
}

void HtmlWriter::findings(const std::vector<Finding>& list, size_t limit) {
  if (list.empty()) return;
  out << "<ul class=\"findings\">\n";
  for (size_t i = 0; i < list.size() && i < limit; ++i) out << "<li>" << markup_escape(list[i].message) << "</li>\n";
  out << "</ul>\n";
}

void HtmlWriter::commands(const std::string& title, const std::vector<std::string>& list) {
  if (list.empty()) return;
  out << "<h4>" << markup_escape(title) << "</h4>\n<pre class=\"replay\">";
  for (const std::string& c : list) out << markup_escape(c) << "\n";
  out << "</pre>\n";
}

void HtmlWriter::table(const json& rows, const std::string& css_class, std::vector<std::string> columns) {
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
  out << "<div class=\"table-box\"><table" << (css_class.empty() ? "" : " class=\"" + css_class + "\"") << ">\n<tr>";
  for (const std::string& c : columns) out << "<th>" << header_text(c) << "</th>";
  out << "</tr>\n";
  size_t shown = std::min(rows.size(), kMaxTableRows);
  for (size_t i = 0; i < shown; ++i) {
    const json& row = rows[i];
    std::string row_class;
    for (const char* key : {"verdict", "outcome", "status"})
      if (row.contains(key) && row[key].is_string()) row_class = status_class(row[key].get<std::string>());
    out << "<tr" << (row_class.empty() ? "" : " class=\"" + markup_escape(row_class) + "\"") << ">";
    for (const std::string& c : columns) {
      json value = row.value(c, json());
      std::string text = cell_text(value);
      out << "<td"
          << (value.is_number()                ? " class=\"num\""
              : longest_word(text) > kLongWord ? " class=\"long\""
                                               : "")
          << ">" << markup_escape(text) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table></div>\n";
  if (rows.size() > shown) out << "<p class=\"note\">" << rows.size() - shown << " more rows not shown.</p>\n";
}

void HtmlWriter::evidence(const std::vector<Evidence>& list) {
  std::vector<const Evidence*> files, metrics;
  for (const Evidence& e : list) {
    if (e.kind == "file")
      files.push_back(&e);
    else if (e.kind == "metric")
      metrics.push_back(&e);
  }
  if (!files.empty()) {
    out << "<ul class=\"links\">\n";
    for (const Evidence* e : files) {
      out << "<li>" << markup_escape(e->name) << ": ";
      anchor(e->path, link(e->path));
      out << "</li>\n";
    }
    out << "</ul>\n";
  }
  if (!metrics.empty()) {
    out << "<ul class=\"metrics\">\n";
    for (const Evidence* e : metrics)
      out << "<li>" << markup_escape(e->name) << " = <code>" << markup_escape(cell_text(e->value)) << "</code></li>\n";
    out << "</ul>\n";
  }
  for (const Evidence& e : list) {
    if (e.kind == "table") {
      out << "<h4>" << markup_escape(e.name) << "</h4>\n";
      table(e.value, "evidence");
    } else if (e.kind == "log") {
      out << "<h4>" << markup_escape(e.name) << " (";
      anchor(e.path, link(e.path));
      out << ")</h4>\n<pre class=\"log\">" << markup_escape(e.value.is_string() ? e.value.get<std::string>() : "")
          << "</pre>\n";
    } else if (e.kind != "file" && e.kind != "metric") {
      out << "<h4>" << markup_escape(e.name) << " (" << markup_escape(e.kind) << ")</h4>\n<pre>"
          << markup_escape(e.value.dump(2)) << "</pre>\n";
    }
  }
}

}  // namespace diagnose
