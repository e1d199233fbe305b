// Turns matched pairs into judged rows: streams both tensors (and the referee)
// through the metric accumulators on a pool of threads, then applies the presets.
#pragma once

#include <vector>

#include "compare/judge.h"
#include "compare/row.h"

namespace diagnose::compare {

// Rows come back in the order of `specs`. threads <= 0 uses every core.
std::vector<Row> evaluate_rows(std::vector<RowSpec> specs, const Tolerances& tolerances, int threads);

}  // namespace diagnose::compare
