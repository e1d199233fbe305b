// A member of JSON another program wrote, read without throwing: null when `object` is no object
// or lacks `key`.
#pragma once

#include <nlohmann/json.hpp>

namespace diagnose {

inline const nlohmann::json& json_member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json none;
  return object.is_object() && object.contains(key) ? object.at(key) : none;
}

}  // namespace diagnose
