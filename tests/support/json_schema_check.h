// A small JSON Schema validator for the tests: the keywords docs/report-schema.json and
// `diagnose schema` use (type, enum, const, properties, required, additionalProperties,
// items, minimum, exclusiveMinimum, maximum, anyOf, $ref to #/$defs/...). Any other
// keyword is reported, so a schema cannot silently outgrow it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace diagnose::testing_support {

inline bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<long long>(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return false;
}

inline void check_schema(const nlohmann::json& v, const nlohmann::json& schema, const nlohmann::json& root,
                         const std::string& path, std::vector<std::string>& errors) {
  static const std::set<std::string> kKnown = {"$schema",    "$id",         "$defs",
                                               "title",      "description",
                                               "default",  // an annotation: nothing to check
                                               "type",       "enum",        "const",
                                               "properties", "required",    "additionalProperties",
                                               "items",      "minimum",     "exclusiveMinimum",
                                               "maximum",    "anyOf",       "$ref"};
  for (const auto& [keyword, value] : schema.items())
    if (!kKnown.count(keyword)) errors.push_back(path + ": unsupported schema keyword " + keyword);
  if (schema.contains("$ref")) {
    std::string ref = schema["$ref"];
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0 || !root["$defs"].contains(ref.substr(prefix.size()))) {
      errors.push_back(path + ": unresolvable $ref " + ref);
      return;
    }
    check_schema(v, root["$defs"][ref.substr(prefix.size())], root, path, errors);
  }
  if (schema.contains("type")) {
    bool ok = false;
    if (schema["type"].is_array()) {
      for (const auto& t : schema["type"]) ok |= has_type(v, t);
    } else {
      ok = has_type(v, schema["type"]);
    }
    if (!ok) {
      errors.push_back(path + ": expected type " + schema["type"].dump() + ", got " + v.dump());
      return;
    }
  }
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    errors.push_back(path + ": " + v.dump() + " not in " + schema["enum"].dump());
  if (schema.contains("const") && v != schema["const"])
    errors.push_back(path + ": expected " + schema["const"].dump() + ", got " + v.dump());
  if (v.is_number()) {
    double x = v.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>()) errors.push_back(path + ": below minimum");
    if (schema.contains("exclusiveMinimum") && x <= schema["exclusiveMinimum"].get<double>())
      errors.push_back(path + ": not above exclusiveMinimum");
    if (schema.contains("maximum") && x > schema["maximum"].get<double>()) errors.push_back(path + ": above maximum");
  }
  if (v.is_object()) {
    for (const auto& name : schema.value("required", nlohmann::json::array()))
      if (!v.contains(name.get<std::string>()))
        errors.push_back(path + ": missing required " + name.get<std::string>());
    const nlohmann::json properties = schema.value("properties", nlohmann::json::object());
    for (const auto& [key, value] : v.items()) {
      if (properties.contains(key)) {
        check_schema(value, properties[key], root, path + "." + key, errors);
      } else if (schema.contains("additionalProperties")) {
        const nlohmann::json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>())
          errors.push_back(path + ": unexpected property " + key);
        else if (extra.is_object())
          check_schema(value, extra, root, path + "." + key, errors);
      }
    }
  }
  if (v.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < v.size(); ++i)
      check_schema(v[i], schema["items"], root, path + "[" + std::to_string(i) + "]", errors);
  }
  if (schema.contains("anyOf")) {
    bool any = false;
    for (const auto& alternative : schema["anyOf"]) {
      std::vector<std::string> alternative_errors;
      check_schema(v, alternative, root, path, alternative_errors);
      any |= alternative_errors.empty();
    }
    if (!any) errors.push_back(path + ": matches none of anyOf");
  }
}

// Every violation of `schema` by `document`, as "path: problem".
inline std::vector<std::string> schema_violations(const nlohmann::json& document, const nlohmann::json& schema) {
  std::vector<std::string> errors;
  check_schema(document, schema, schema, "$", errors);
  return errors;
}

}  // namespace diagnose::testing_support
