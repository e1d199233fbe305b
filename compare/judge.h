// Pass / fail / not comparable for one row, from tolerance presets chosen by dtype.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compare/dtype.h"
#include "compare/metrics.h"
#include "compare/tensor.h"

namespace diagnose::compare {

// One preset, for rows without a float64 truth: a row passes allclose (no element with
// |m-g| > atol + rtol*|g|), or else both cosine >= min_cosine and relative L2 <= max_relative_l2.
// Rows with a truth are judged by the truth ratio rule (judge() below); atol/rtol a user set
// are honoured as an allclose criterion that nothing else overrides.
struct TolerancePreset {
  std::string name;            // "fp32", "fp16", "bf16", "fp8", "exact"
  double atol = 0, rtol = 0;   // allclose criterion
  double min_cosine = 1.0;     // metric criterion for rows that fail allclose
  double max_relative_l2 = 0;  // relative_euclidean_distance bound for that criterion
  bool exact = false;          // integers and bool: any difference fails
  // Truth ratio rule multiplier m (torch._dynamo.utils.same's: 2 for fp32, 3 for 16 bits).
  double referee_multiplier = 2.0;
  // Set by an override (a user's tolerances), not by the defaults.
  bool user_allclose = false;    // atol or rtol: allclose decides
  bool user_multiplier = false;  // referee_multiplier: the truth ratio rule may still pass a row
};

// A user's value for one field of one preset (fp16.rtol = 1e-2): a workflow's tolerances:
// mapping or the command line's --tol.
struct ToleranceOverride {
  std::string preset, field;
  double value = 0;
  std::string text;  // the value as the user wrote it ("1e-2")
  // The command line's form, "fp16.rtol=1e-2".
  std::string assignment() const { return preset + "." + field + "=" + text; }
};

// The override of `preset`.`field` to the number written `text`; an error (not a number) or "".
std::string make_tolerance_override(const std::string& preset, const std::string& field, const std::string& text,
                                    ToleranceOverride* out);
// Parses the command line's "name.field=value" (e.g. "fp16.rtol=1e-2"), naming a known preset;
// an error or "".
std::string parse_tolerance_override(const std::string& assignment, ToleranceOverride* out);

struct Tolerances {
  std::map<std::string, TolerancePreset> presets;  // by preset name
  // Name of the preset to use regardless of dtype (command line --preset).
  std::optional<std::string> forced_preset;
  static Tolerances defaults();
  // Preset for the dtype of the data under test.
  const TolerancePreset& for_dtype(DType target) const;
  // Loads overrides from a JSON file ({"fp16": {"atol": 1e-3, ...}, ...}).
  // Returns an error message, empty on success.
  std::string load_overrides(const std::string& json_path);
  // Sets the overridden field; returns an error (an unknown preset or field, a value out of range) or "".
  std::string apply(const ToleranceOverride& o);
  // parse_tolerance_override, then apply.
  std::string apply_override(const std::string& assignment);
};

// Which side holds NaN or Inf.
struct SpecialValues {
  bool golden = false, mine = false;
  bool any() const { return golden || mine; }
};

// Both sides against the float64 truth of the golden value (same identity, same control flow).
struct TruthErrors {
  // RMSE against the truth over the elements where that side and the truth are finite.
  double golden_rmse = 0, mine_rmse = 0;
  double scale = 0;  // RMS of the truth, or of the golden op's inputs when that is larger
  uint64_t elements = 0;
  // The coarsest precision the value passed through: the golden's recorded precision and
  // both sides' dtypes (a float32 intermediate of a bf16 model: BFloat16).
  DType precision = DType::Float32;
};

struct Judgement {
  bool pass = false;
  std::string rule;  // which criterion decided, e.g. "fp16 allclose", "bf16 truth ratio"
  // The truth ratio rule's bound m * golden_rmse + floor, when that rule decided.
  std::optional<double> truth_bound;
};

// The truth ratio rule (docs/metrics.md): the target passes when
//   rmse(mine, truth) <= m * rmse(golden, truth) + floor,  floor = u * scale,
// m the multiplier of the precision's preset (at least 3 below 1000 elements, as same() does)
// and u the unit roundoff of that precision: one rounding of the value where it was computed.
bool truth_ratio_holds(const Tolerances& tolerances, const TruthErrors& truth, double* bound);

// Judges one pair whose target has dtype `target`. Both sides empty passes. NaN and Inf are
// judged by position (torch._dynamo.utils.same with equal_nan): where the sides disagree on
// NaN, +Inf or -Inf the row fails, unless a float64 truth holds what the target holds there
// (the golden is the one that is wrong: a spurious eager overflow); the rest is judged by the
// usual rule, the RMSEs and allclose over the elements finite on both sides.
Judgement judge(const Tolerances& tolerances, DType target, const PairMetrics& m, SpecialValues special,
                const std::optional<TruthErrors>& truth);

// One kind of NaN/Inf disagreement in words: "golden NaN at 1 of 3 elements, target finite
// there (first at [0])", with the truth's value there when there is one. `scalars` is the
// pair's scalar count, `shape` the golden's shape (positions are given as its indexes).
std::string non_finite_text(const NonFiniteDisagreement& d, uint64_t scalars, const Shape& shape,
                            int scalars_per_element);

}  // namespace diagnose::compare
