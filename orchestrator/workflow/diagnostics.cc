#include "orchestrator/workflow/diagnostics.h"

#include <algorithm>
#include <ostream>

namespace diagnose {

std::string format_diagnostic(const Diagnostic& d) {
  std::string where = d.file;
  if (d.line > 0) where += ":" + std::to_string(d.line) + ":" + std::to_string(d.column);
  return where + ": error: " + d.message;
}

void Diagnostics::error(const YAML::Mark& at, const std::string& message) { error_in(file_, at, message); }

void Diagnostics::error_in(const std::string& file, const YAML::Mark& at, const std::string& message) {
  // yaml-cpp counts from 0 and uses -1 for nodes without a position.
  if (at.line < 0) return list_.push_back({file, 0, 0, message});
  list_.push_back({file, at.line + 1, at.column + 1, message});
}

void Diagnostics::error_in_file(const std::string& message) { list_.push_back({file_, 0, 0, message}); }

void Diagnostics::print(std::ostream& out) const {
  for (const Diagnostic& d : list_) out << format_diagnostic(d) << "\n";
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& known) {
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  std::string best;
  for (const std::string& candidate : known) {
    size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  std::string match = closest_match(word, known);
  return match.empty() ? "" : " (did you mean '" + match + "'?)";
}

}  // namespace diagnose
