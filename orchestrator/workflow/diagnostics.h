// Errors found in a workflow file, each with its position (file:line:column).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <yaml-cpp/mark.h>

namespace diagnose {

struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when the error concerns the whole file
  int column = 0;  // 1-based
  std::string message;
};

// "file:line:column: error: message"
std::string format_diagnostic(const Diagnostic& d);

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}
  void error(const YAML::Mark& at, const std::string& message);
  // An error in another file than this one's (a base workflow's key, through `extends:`).
  void error_in(const std::string& file, const YAML::Mark& at, const std::string& message);
  void error_in_file(const std::string& message);
  bool empty() const { return list_.empty(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  const std::string& file() const { return file_; }
  void print(std::ostream& out) const;

 private:
  std::string file_;
  std::vector<Diagnostic> list_;
};

// The known word closest to `word` when it is a plausible misspelling, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& known);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);

}  // namespace diagnose
