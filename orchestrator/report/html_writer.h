// What the parts of report.html write with: links relative to the run directory, tables,
// findings, evidence and commands, into one stream.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"

namespace diagnose {

class HtmlWriter {
 public:
  HtmlWriter(std::ostream& out, std::string run_dir) : out(out), run_dir_(std::move(run_dir)) {}

  // Links are relative to the run directory, where report.html lives.
  std::string link(const std::string& path) const;
  void anchor(const std::string& path, const std::string& text);
  void findings(const std::vector<Finding>& list, size_t limit = SIZE_MAX);
  void commands(const std::string& title, const std::vector<std::string>& list);
  // `columns`: those that come first, where the rows have them (a JSON object's keys come
  // sorted); the rest follow.
  void table(const nlohmann::json& rows, const std::string& css_class = "", std::vector<std::string> columns = {});
  void evidence(const std::vector<Evidence>& list);

  std::ostream& out;

 private:
  std::string run_dir_;
};

// A status name as a CSS class ("PASS" -> "pass").
std::string status_class(std::string name);
// A JSON value as a table cell's text.
std::string cell_text(const nlohmann::json& value);
// `text` cut to `limit` bytes, the last one an ellipsis.
std::string clip(const std::string& text, size_t limit);

}  // namespace diagnose
