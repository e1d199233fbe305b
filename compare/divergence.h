// Where the error starts: the first failing row, and the "source" ops whose inputs
// pass but whose outputs fail (as opposed to ops that only inherit error).
#pragma once

#include <vector>

#include "compare/compare.h"

namespace diagnose::compare {

// One Divergence per (rank, graph, token) that has a failing row. An op with
// compared inputs is a source when none of its inputs fails and an output fails;
// an op with no compared inputs can only be judged by position, so it is a source
// only when it is the first failing op of its token.
std::vector<Divergence> find_divergences(const std::vector<RowGroup>& groups);

}  // namespace diagnose::compare
