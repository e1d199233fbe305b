// Doubles in JSON, which has no NaN or infinity: the comparison core's JSON writes them as
// the strings "nan", "inf" and "-inf"; the gate and the history write NaN as null.
#pragma once

#include <nlohmann/json.hpp>

namespace diagnose::compare {

// v, or "nan" / "inf" / "-inf".
nlohmann::json json_number(double v);
// v, or null for NaN and "inf" / "-inf".
nlohmann::json json_number_or_null(double v);
// A number, or one of the strings above; NaN for anything else (null included).
double number_from_json(const nlohmann::json& value);

}  // namespace diagnose::compare
