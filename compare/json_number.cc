#include "compare/json_number.h"

#include <cmath>
#include <string>

namespace diagnose::compare {

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json json_number_or_null(double v) { return std::isnan(v) ? nlohmann::json() : json_number(v); }

double number_from_json(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return NAN;
}

}  // namespace diagnose::compare
