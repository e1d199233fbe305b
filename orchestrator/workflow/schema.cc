#include "orchestrator/workflow/schema.h"

#include <cmath>
#include <set>

namespace diagnose {

namespace {

Schema typed(Schema::Type type, std::string description) {
  Schema s;
  s.type = type;
  s.description = std::move(description);
  return s;
}

// A schema of `type` with one more member set (its enum values, minimum, items, properties...).
template <class Member>
Schema typed(Schema::Type type, std::string description, Member Schema::*member, Member value) {
  Schema s = typed(type, std::move(description));
  s.*member = std::move(value);
  return s;
}

}  // namespace

Schema string_schema(std::string description, std::vector<std::string> enum_values) {
  return typed(Schema::Type::String, std::move(description), &Schema::enum_values, std::move(enum_values));
}

Schema plain_string_schema(std::string description) {
  Schema s = string_schema(std::move(description));
  s.templated = false;
  return s;
}

Schema condition_schema(std::string description) { return typed(Schema::Type::Condition, std::move(description)); }

Schema integer_schema(std::string description, std::optional<double> minimum) {
  return typed(Schema::Type::Integer, std::move(description), &Schema::minimum, minimum);
}

Schema number_schema(std::string description, std::optional<double> minimum, bool exclusive_minimum) {
  Schema s = typed(Schema::Type::Number, std::move(description));
  s.minimum = minimum;
  s.exclusive_minimum = exclusive_minimum;
  return s;
}

Schema boolean_schema(std::string description) { return typed(Schema::Type::Boolean, std::move(description)); }

Schema array_schema(std::string description, Schema items) {
  return typed(Schema::Type::Array, std::move(description), &Schema::items, std::make_shared<Schema>(std::move(items)));
}

Schema object_schema(std::string description, std::vector<Property> properties) {
  return typed(Schema::Type::Object, std::move(description), &Schema::properties, std::move(properties));
}

Schema map_schema(std::string description, Schema values) {
  return typed(Schema::Type::Map, std::move(description), &Schema::items, std::make_shared<Schema>(std::move(values)));
}

Schema any_of_schema(std::string description, std::vector<Schema> alternatives) {
  return typed(Schema::Type::AnyOf, std::move(description), &Schema::alternatives, std::move(alternatives));
}

Schema any_schema(std::string description) { return typed(Schema::Type::Any, std::move(description)); }

Schema defaulted(Schema schema, nlohmann::json value) {
  std::string shown = value.is_string() ? value.get<std::string>() : value.dump();
  if (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>())
    shown = std::to_string(static_cast<long long>(value.get<double>()));  // 3600, not 3600.0
  std::string& text = schema.description;
  bool sentence = !text.empty() && text.back() == '.';
  if (sentence) text.pop_back();
  text += " (default " + shown + ")" + (sentence ? "." : "");
  schema.default_value = std::move(value);
  return schema;
}

Property optional(std::string name, Schema schema) { return {std::move(name), std::move(schema), false}; }
Property required(std::string name, Schema schema) { return {std::move(name), std::move(schema), true}; }

std::vector<std::string> property_names(const Schema& object) {
  std::vector<std::string> names;
  for (const Property& p : object.properties) names.push_back(p.name);
  return names;
}

namespace {

std::string type_name(const Schema& s) {
  switch (s.type) {
    case Schema::Type::String: return "a string";
    case Schema::Type::Condition: return "a condition string";
    case Schema::Type::Integer: return "an integer";
    case Schema::Type::Number: return "a number";
    case Schema::Type::Boolean: return "true or false";
    case Schema::Type::Array: return "a list";
    case Schema::Type::Object:
    case Schema::Type::Map: return "a mapping";
    case Schema::Type::Any: return "anything";
    case Schema::Type::AnyOf: {
      std::string names;
      for (size_t i = 0; i < s.alternatives.size(); ++i) names += (i ? " or " : "") + type_name(s.alternatives[i]);
      return names;
    }
  }
  return "?";
}

std::string shape_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an undefined value";
  }
}

bool shape_fits(const YAML::Node& node, const Schema& s) {
  switch (s.type) {
    case Schema::Type::Array: return node.IsSequence();
    case Schema::Type::Object:
    case Schema::Type::Map: return node.IsMap();
    case Schema::Type::AnyOf: return false;
    case Schema::Type::Any: return true;
    default: return node.IsScalar();
  }
}

std::string format_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return std::to_string(v);
}

void check_range(const YAML::Node& node, const Schema& schema, double value, const std::string& where,
                 Diagnostics& diagnostics) {
  if (schema.minimum) {
    bool too_small = schema.exclusive_minimum ? value <= *schema.minimum : value < *schema.minimum;
    if (too_small)
      diagnostics.error(node.Mark(), where + " must be " + (schema.exclusive_minimum ? "greater than " : "at least ") +
                                         format_number(*schema.minimum) + ", got " + node.Scalar());
  }
  if (schema.maximum && value > *schema.maximum)
    diagnostics.error(node.Mark(),
                      where + " must be at most " + format_number(*schema.maximum) + ", got " + node.Scalar());
}

void check_scalar(const YAML::Node& node, const Schema& schema, const std::string& where, Diagnostics& diagnostics,
                  const StringVisitor& visitor) {
  const std::string& text = node.Scalar();
  switch (schema.type) {
    case Schema::Type::String:
      if (!schema.enum_values.empty() &&
          std::find(schema.enum_values.begin(), schema.enum_values.end(), text) == schema.enum_values.end()) {
        std::string choices;
        for (const std::string& v : schema.enum_values) choices += (choices.empty() ? "" : ", ") + v;
        diagnostics.error(node.Mark(), where + ": unknown value '" + text + "'" +
                                           did_you_mean(text, schema.enum_values) + "; expected one of: " + choices);
      } else if (schema.templated && visitor.on_template) {
        visitor.on_template(node, text);
      }
      return;
    case Schema::Type::Condition:
      if (visitor.on_condition) visitor.on_condition(node, text);
      return;
    case Schema::Type::Integer: {
      long long value;
      if (!YAML::convert<long long>::decode(node, value)) {
        diagnostics.error(node.Mark(), where + " must be an integer, got '" + text + "'");
        return;
      }
      check_range(node, schema, static_cast<double>(value), where, diagnostics);
      return;
    }
    case Schema::Type::Number: {
      double value;
      if (!YAML::convert<double>::decode(node, value) || std::isnan(value)) {
        diagnostics.error(node.Mark(), where + " must be a number, got '" + text + "'");
        return;
      }
      check_range(node, schema, value, where, diagnostics);
      return;
    }
    case Schema::Type::Boolean: {
      bool value;
      if (!YAML::convert<bool>::decode(node, value))
        diagnostics.error(node.Mark(), where + " must be true or false, got '" + text + "'");
      return;
    }
    default: return;
  }
}

}  // namespace

void check_against_schema(const YAML::Node& node, const Schema& schema, const std::string& where,
                          Diagnostics& diagnostics, const StringVisitor& visitor) {
  if (schema.type == Schema::Type::AnyOf) {
    for (const Schema& alternative : schema.alternatives) {
      if (shape_fits(node, alternative)) return check_against_schema(node, alternative, where, diagnostics, visitor);
    }
    diagnostics.error(node.Mark(), where + " must be " + type_name(schema) + ", got " + shape_name(node));
    return;
  }
  if (!shape_fits(node, schema)) {
    diagnostics.error(node.Mark(), where + " must be " + type_name(schema) + ", got " + shape_name(node));
    return;
  }
  switch (schema.type) {
    case Schema::Type::Array: {
      size_t i = 0;
      for (const YAML::Node& item : node) {
        check_against_schema(item, *schema.items, where + "[" + std::to_string(i) + "]", diagnostics, visitor);
        ++i;
      }
      return;
    }
    case Schema::Type::Map:
    case Schema::Type::Object: {
      std::set<std::string> seen;
      std::vector<std::string> known = property_names(schema);
      for (const auto& entry : node) {
        if (!entry.first.IsScalar()) {
          diagnostics.error(entry.first.Mark(), where + ": keys must be plain strings");
          continue;
        }
        const std::string key = entry.first.Scalar();
        const std::string child = where.empty() ? key : where + "." + key;
        if (!seen.insert(key).second) {
          diagnostics.error(entry.first.Mark(), where + ": duplicate key '" + key + "'");
          continue;
        }
        if (schema.type == Schema::Type::Map) {
          check_against_schema(entry.second, *schema.items, child, diagnostics, visitor);
          continue;
        }
        auto property = std::find_if(schema.properties.begin(), schema.properties.end(),
                                     [&](const Property& p) { return p.name == key; });
        if (property == schema.properties.end()) {
          diagnostics.error(entry.first.Mark(), (where.empty() ? std::string("top level") : where) + ": unknown key '" +
                                                    key + "'" + did_you_mean(key, known));
          continue;
        }
        check_against_schema(entry.second, property->schema, child, diagnostics, visitor);
      }
      for (const Property& p : schema.properties) {
        if (p.required && !seen.count(p.name))
          diagnostics.error(node.Mark(), (where.empty() ? std::string("top level") : where) +
                                             ": missing required key '" + p.name + "'");
      }
      return;
    }
    default: check_scalar(node, schema, where, diagnostics, visitor);
  }
}

nlohmann::json to_json_schema(const Schema& schema) {
  nlohmann::json out;
  if (!schema.description.empty()) out["description"] = schema.description;
  if (!schema.default_value.is_null()) out["default"] = schema.default_value;
  switch (schema.type) {
    case Schema::Type::String:
      // YAML users write numbers and booleans in argv and env; they are strings to us.
      if (schema.enum_values.empty())
        out["type"] = {"string", "number", "boolean"};
      else
        out["enum"] = schema.enum_values;
      break;
    case Schema::Type::Condition: out["type"] = "string"; break;
    case Schema::Type::Any: break;
    case Schema::Type::Integer:
    case Schema::Type::Number:
      out["type"] = schema.type == Schema::Type::Integer ? "integer" : "number";
      if (schema.minimum) out[schema.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = *schema.minimum;
      if (schema.maximum) out["maximum"] = *schema.maximum;
      break;
    case Schema::Type::Boolean: out["type"] = "boolean"; break;
    case Schema::Type::Array:
      out["type"] = "array";
      out["items"] = to_json_schema(*schema.items);
      break;
    case Schema::Type::Map:
      out["type"] = "object";
      out["additionalProperties"] = to_json_schema(*schema.items);
      break;
    case Schema::Type::Object: {
      out["type"] = "object";
      out["additionalProperties"] = false;
      nlohmann::json properties = nlohmann::json::object();
      nlohmann::json required = nlohmann::json::array();
      for (const Property& p : schema.properties) {
        properties[p.name] = to_json_schema(p.schema);
        if (p.required) required.push_back(p.name);
      }
      out["properties"] = properties;
      if (!required.empty()) out["required"] = required;
      break;
    }
    case Schema::Type::AnyOf: {
      nlohmann::json alternatives = nlohmann::json::array();
      for (const Schema& a : schema.alternatives) alternatives.push_back(to_json_schema(a));
      out["anyOf"] = alternatives;
      break;
    }
  }
  return out;
}

}  // namespace diagnose
