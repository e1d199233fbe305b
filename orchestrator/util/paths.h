// Paths as the workflow writes them, made absolute.
#pragma once

#include <string>

namespace diagnose {

// `path` made absolute against `base` and normalised ("." and ".." removed).
std::string absolute_path(const std::string& path, const std::string& base);

}  // namespace diagnose
