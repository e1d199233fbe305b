// An enum written by name: one table of {value, name} pairs serves both directions.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace diagnose {

// The table's first entry stands for a value or a name the table does not hold.
template <typename Enum, std::size_t N>
std::string enum_name(const std::pair<Enum, const char*> (&names)[N], Enum value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return names[0].second;
}

template <typename Enum, std::size_t N>
Enum enum_from_name(const std::pair<Enum, const char*> (&names)[N], const std::string& name) {
  for (const auto& [value, n] : names)
    if (name == n) return value;
  return names[0].first;
}

}  // namespace diagnose
