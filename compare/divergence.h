// Where the error starts: the first failing row, and the "source" ops whose inputs
// pass but whose outputs fail (as opposed to ops that only inherit error).
#pragma once

#include <string>
#include <vector>

#include "compare/compare.h"

namespace diagnose::compare {

// One Divergence per (rank, graph, token) that has a failing row. An op with
// compared inputs is a source when none of its inputs fails and an output fails;
// an op with no compared inputs can only be judged by position, so it is a source
// only when it is the first failing op of its token. Each source says what is known of its inputs
// (source_inputs): that they pass only where each was judged a pass.
std::vector<Divergence> find_divergences(const std::vector<RowGroup>& groups);

// Why an op is a source, as its finding says it: "its inputs pass, an output fails" only where
// each input was judged a pass; otherwise what is known ("the first failing row; its inputs were
// not dumped").
std::string source_inputs_text(SourceInputs inputs);

}  // namespace diagnose::compare
