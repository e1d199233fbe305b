// The workflow format described as data: checked against YAML by the loader and
// printed as JSON Schema by `diagnose schema`, so the two cannot disagree.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "orchestrator/workflow/diagnostics.h"

namespace diagnose {

struct Property;

struct Schema {
  enum class Type {
    String,     // any scalar; may hold ${...} template references
    Condition,  // a string holding a condition expression (see condition.h)
    Integer,
    Number,
    Boolean,
    Array,   // of `items`
    Object,  // fixed `properties`, no other keys
    Map,     // any keys, values of `items`
    AnyOf,   // the first alternative whose YAML shape (scalar/sequence/map) fits
    Any,     // anything (checked elsewhere)
  };
  Type type = Type::String;
  std::string description;
  std::vector<std::string> enum_values;  // String
  bool templated = true;                 // String: ${...} is expanded (so it is checked)
  std::optional<double> minimum;         // Integer, Number
  std::optional<double> maximum;
  bool exclusive_minimum = false;
  std::shared_ptr<Schema> items;     // Array and Map values
  std::vector<Property> properties;  // Object
  std::vector<Schema> alternatives;  // AnyOf
  nlohmann::json default_value;      // what an absent key means; null when it has no default
};

struct Property {
  std::string name;
  Schema schema;
  bool required = false;
};

// Builders, so that schemas read like the format they describe.
Schema string_schema(std::string description, std::vector<std::string> enum_values = {});
// A string used as written: names, descriptions.
Schema plain_string_schema(std::string description);
Schema condition_schema(std::string description);
Schema integer_schema(std::string description, std::optional<double> minimum = std::nullopt);
Schema number_schema(std::string description, std::optional<double> minimum = std::nullopt,
                     bool exclusive_minimum = false);
Schema boolean_schema(std::string description);
Schema array_schema(std::string description, Schema items);
Schema object_schema(std::string description, std::vector<Property> properties);
Schema map_schema(std::string description, Schema values);
Schema any_of_schema(std::string description, std::vector<Schema> alternatives);
Schema any_schema(std::string description);
Property optional(std::string name, Schema schema);
// `schema` whose absence means `value`: printed in the JSON Schema's "default" and in the
// description, and read by StepContext::option.
Schema defaulted(Schema schema, nlohmann::json value);
Property required(std::string name, Schema schema);

// What the check reports for every string it accepts, so that later passes can
// check template references and conditions without walking the YAML again.
struct StringVisitor {
  std::function<void(const YAML::Node& node, const std::string& text)> on_template;
  std::function<void(const YAML::Node& node, const std::string& text)> on_condition;
};

// Checks `node` against `schema`; `where` names the node in messages ("model", "steps[2]").
void check_against_schema(const YAML::Node& node, const Schema& schema, const std::string& where,
                          Diagnostics& diagnostics, const StringVisitor& visitor);

// JSON Schema (draft 2020-12) of one schema node.
nlohmann::json to_json_schema(const Schema& schema);

// Property names of an Object schema.
std::vector<std::string> property_names(const Schema& object);

}  // namespace diagnose
