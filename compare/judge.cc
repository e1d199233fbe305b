#include "compare/judge.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace diagnose::compare {

namespace {

TolerancePreset make(const char* name, double atol, double rtol, double min_cosine, double max_relative_l2,
                     double referee_multiplier) {
  return {name, atol, rtol, min_cosine, max_relative_l2, /*exact=*/false, referee_multiplier};
}

std::string preset_for(DType t) {
  switch (t) {
    case DType::Float16: return "fp16";
    case DType::BFloat16: return "bf16";
    case DType::Float32:
    case DType::Complex64: return "fp32";
    case DType::Float64:
    case DType::Complex128: return "fp64";
    case DType::Float8E4M3FN:
    case DType::Float8E5M2:
    case DType::HiFloat8: return "fp8";
    default: return "exact";
  }
}

std::string set_field(TolerancePreset& p, const std::string& field, double value) {
  if (field == "atol" || field == "rtol") p.user_allclose = true;
  if (field == "referee_multiplier") p.user_multiplier = true;
  if (field == "atol")
    p.atol = value;
  else if (field == "rtol")
    p.rtol = value;
  else if (field == "min_cosine")
    p.min_cosine = value;
  else if (field == "max_relative_l2")
    p.max_relative_l2 = value;
  else if (field == "referee_multiplier")
    p.referee_multiplier = value;
  else if (field == "exact")
    p.exact = value != 0;
  else
    return "unknown tolerance field '" + field +
           "' (known: atol, rtol, min_cosine, max_relative_l2, referee_multiplier, exact)";
  if (value < 0 || value != value) return "tolerance " + field + " must be a non-negative number";
  if (field == "min_cosine" && value > 1) return "min_cosine must be at most 1";
  return "";
}

// The index of a scalar position in `shape` (row-major): "[1, 2]".
std::string index_text(uint64_t position, const Shape& shape, int scalars_per_element) {
  uint64_t element = position / static_cast<uint64_t>(std::max(scalars_per_element, 1));
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const uint64_t extent = shape[d] > 0 ? static_cast<uint64_t>(shape[d]) : 1;
    index[d] = static_cast<int64_t>(element % extent);
    element /= extent;
  }
  return shape_to_string(index);
}

std::string known_presets(const Tolerances& t) {
  std::string out;
  for (const auto& [name, preset] : t.presets) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

Tolerances Tolerances::defaults() {
  Tolerances t;
  for (const auto& p : {
           make("fp64", 1e-7, 1e-7, 0.9999999, 1e-6, 2.0),
           make("fp32", 1e-5, 1.3e-6, 0.99999, 1e-4, 2.0),
           make("fp16", 1e-3, 1e-3, 0.9999, 5e-3, 3.0),
           make("bf16", 1e-2, 1.6e-2, 0.999, 2e-2, 3.0),
           make("fp8", 1e-1, 1.25e-1, 0.99, 1e-1, 3.0),
       })
    t.presets[p.name] = p;
  TolerancePreset exact = make("exact", 0, 0, 1.0, 0, 1.0);
  exact.exact = true;
  t.presets["exact"] = exact;
  return t;
}

const TolerancePreset& Tolerances::for_dtype(DType target) const {
  const std::string name = forced_preset ? *forced_preset : preset_for(target);
  auto it = presets.find(name);
  if (it != presets.end()) return it->second;
  return presets.begin()->second;
}

std::string make_tolerance_override(const std::string& preset, const std::string& field, const std::string& text,
                                    ToleranceOverride* out) {
  double value;
  std::istringstream in(text);
  if (!(in >> value) || !in.eof()) return "tolerance value '" + text + "' is not a number";
  *out = {preset, field, value, text};
  return "";
}

std::string parse_tolerance_override(const std::string& assignment, ToleranceOverride* out) {
  const auto dot = assignment.find('.');
  const auto eq = assignment.find('=');
  if (dot == std::string::npos || eq == std::string::npos || eq < dot)
    return "tolerance override '" + assignment + "' must look like PRESET.FIELD=VALUE (e.g. fp16.rtol=1e-2)";
  const std::string name = assignment.substr(0, dot);
  static const Tolerances known = Tolerances::defaults();
  if (!known.presets.count(name))
    return "unknown tolerance preset '" + name + "' (known: " + known_presets(known) + ")";
  return make_tolerance_override(name, assignment.substr(dot + 1, eq - dot - 1), assignment.substr(eq + 1), out);
}

std::string Tolerances::apply(const ToleranceOverride& o) {
  auto it = presets.find(o.preset);
  if (it == presets.end()) return "unknown tolerance preset '" + o.preset + "' (known: " + known_presets(*this) + ")";
  return set_field(it->second, o.field, o.value);
}

std::string Tolerances::apply_override(const std::string& assignment) {
  ToleranceOverride o;
  const std::string error = parse_tolerance_override(assignment, &o);
  return error.empty() ? apply(o) : error;
}

std::string Tolerances::load_overrides(const std::string& json_path) {
  std::ifstream in(json_path);
  if (!in) return "cannot read tolerance file " + json_path;
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return json_path + ": expected a JSON object of presets, e.g. {\"fp16\": {\"rtol\": 1e-2}}";
  for (const auto& [name, fields] : doc.items()) {
    auto it = presets.find(name);
    if (it == presets.end())
      return json_path + ": unknown tolerance preset '" + name + "' (known: " + known_presets(*this) + ")";
    if (!fields.is_object()) return json_path + ": preset '" + name + "' must be an object";
    for (const auto& [field, value] : fields.items()) {
      if (!value.is_number() && !value.is_boolean()) return json_path + ": " + name + "." + field + " must be a number";
      std::string error = set_field(it->second, field, value.get<double>());
      if (!error.empty()) return json_path + ": " + name + ": " + error;
    }
  }
  return "";
}

bool truth_ratio_holds(const Tolerances& tolerances, const TruthErrors& truth, double* bound) {
  auto it = tolerances.presets.find(preset_for(truth.precision));
  const TolerancePreset& preset = it != tolerances.presets.end() ? it->second : tolerances.for_dtype(truth.precision);
  double multiplier = preset.referee_multiplier;
  // same(): in small tensors noise dominates the RMSE
  if (truth.elements < 1000 && !preset.user_multiplier) multiplier = std::max(multiplier, 3.0);
  const double unit_roundoff = is_floating(truth.precision) ? ulp_at(truth.precision, 1.0) / 2 : 0.0;
  *bound = multiplier * truth.golden_rmse + unit_roundoff * truth.scale;
  return truth.mine_rmse <= *bound;
}

Judgement judge(const Tolerances& tolerances, DType target, const PairMetrics& m, SpecialValues special,
                const std::optional<TruthErrors>& truth) {
  const TolerancePreset& preset = tolerances.for_dtype(target);
  const std::string& name = preset.name;
  Judgement j;
  if (m.elements == 0) {
    j.pass = true;
    j.rule = name + " empty";
    return j;
  }
  const bool allclose = m.special_mismatches == 0 && m.allclose_violations == 0;
  if (preset.exact) {
    j.pass = allclose;
    j.rule = name + " exact";
    return j;
  }
  if (preset.user_allclose) {
    std::ostringstream rule;
    rule << name << " allclose as set (atol " << preset.atol << ", rtol " << preset.rtol << ")";
    j.rule = rule.str();
    j.pass = allclose;
    if (allclose || !truth || !preset.user_multiplier) return j;
  }
  if (truth) {
    j.rule = preset_for(truth->precision) + " truth ratio";
    if (m.non_finite_target_wrong() > 0) {
      j.rule += ": nan/inf positions differ from the float64 truth";
      return j;
    }
    double bound = 0;
    j.pass = truth_ratio_holds(tolerances, *truth, &bound);
    j.truth_bound = bound;
    return j;
  }
  if (m.special_mismatches > 0) {
    j.rule = name + " nan/inf positions differ";
    return j;
  }
  if (allclose) {
    j.pass = true;
    j.rule = name + " allclose";
    return j;
  }
  if (!special.any() && m.cosine_unrounded >= preset.min_cosine &&
      m.relative_euclidean_distance <= preset.max_relative_l2) {
    j.pass = true;
    j.rule = name + " cosine+relative_l2";
    return j;
  }
  j.rule = name + (special.any() ? " allclose" : " allclose,cosine+relative_l2");
  return j;
}

std::string non_finite_text(const NonFiniteDisagreement& d, uint64_t scalars, const Shape& shape,
                            int scalars_per_element) {
  const bool golden_special = d.golden != ValueClass::Finite;
  std::string text = std::string(golden_special ? "golden " : "target ") +
                     value_class_name(golden_special ? d.golden : d.mine) + " at " + std::to_string(d.count) + " of " +
                     std::to_string(scalars) + " elements, " + (golden_special ? "target " : "golden ") +
                     value_class_name(golden_special ? d.mine : d.golden) + " there";
  std::string notes;
  if (d.truth && !d.target_wrong()) {
    text += " like the float64 truth";
    notes = "the golden is wrong there";
  } else if (d.truth) {
    text += ", float64 truth " + value_class_name(*d.truth);
  }
  if (!shape.empty()) {
    std::string first;
    for (uint64_t position : d.first)
      first += (first.empty() ? "" : ", ") + index_text(position, shape, scalars_per_element);
    notes += (notes.empty() ? "" : "; ") + std::string("first at ") + first;
  }
  return notes.empty() ? text : text + " (" + notes + ")";
}

}  // namespace diagnose::compare
