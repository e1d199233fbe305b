// Reading JSON other programs wrote (a dump's manifest, the plugin's status.json and progress
// files, a report): a field may be missing or of any type, and reading it must never throw.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace diagnose::compare {

// The string member `key` of `object`, or `otherwise` when `object` is no object, lacks `key`
// or holds something else there.
inline std::string string_at(const nlohmann::json& object, const char* key, const std::string& otherwise = "") {
  return object.contains(key) && object.at(key).is_string() ? object.at(key).get<std::string>() : otherwise;
}

}  // namespace diagnose::compare
