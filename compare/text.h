#pragma once
// Small string tests shared by the readers (C++17 has no std::string::starts_with).
#include <string>

namespace diagnose::compare {

inline bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace diagnose::compare
