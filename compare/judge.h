// Pass / fail / not comparable for one row, from tolerance presets chosen by dtype.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compare/dtype.h"
#include "compare/metrics.h"

namespace diagnose::compare {

// One preset. A row passes when every set criterion holds:
// allclose (no element with |m-g| > atol + rtol*|g|), or else both
// cosine >= min_cosine and max_abs <= max_abs_error (the metric rule).
struct TolerancePreset {
  std::string name;            // "fp32", "fp16", "bf16", "fp8", "exact"
  double atol = 0, rtol = 0;   // allclose criterion
  double min_cosine = 1.0;     // metric criterion for rows that fail allclose
  double max_relative_l2 = 0;  // relative_euclidean_distance bound for that criterion
  bool exact = false;          // integers and bool: any difference fails
  // Three-way rule multiplier (torch._dynamo.utils.same): with a referee, a row that
  // fails the preset still passes if rmse(mine, ref) <= k * rmse(golden, ref) + atol/10.
  double referee_multiplier = 2.0;
};

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
  // Applies "name.field=value" (e.g. "fp16.rtol=1e-2"); returns an error or "".
  std::string apply_override(const std::string& assignment);
};

struct Judgement {
  bool pass = false;
  std::string rule;  // which criterion decided, e.g. "fp16 allclose", "fp16 referee"
};

// Judges one pair. `has_special` says NaN/Inf occur on either side: then only the
// element-wise rules apply (NaN matches NaN, Inf the same Inf), as the metrics are
// not computed for such rows. Both sides empty passes.
Judgement judge(const TolerancePreset& preset, const PairMetrics& m, bool has_special,
                std::optional<double> rmse_golden_vs_referee, std::optional<double> rmse_mine_vs_referee);

}  // namespace diagnose::compare
