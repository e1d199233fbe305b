// The culprits of a subgraph search, one per minimal failing subgraph ("layer_norm",
// "mul+add"), said once each: a culprit found in several subgraphs (the same op in each layer)
// is named once with its count and the graphs its nodes are in, "layer_norm (2 subgraphs, graph
// g0)", never "layer_norm, layer_norm".
#pragma once

#include "steps/layer.h"

#include <string>
#include <vector>

namespace diagnose {

struct SubgraphCulprit {
  std::string ops;                 // its ops joined by "+"
  std::vector<std::string> nodes;  // its node ids, g<k>.<name>
};

// The culprits in order of first appearance, repeated ones grouped.
std::vector<std::string> grouped_culprits(const std::vector<SubgraphCulprit>& culprits);

}  // namespace diagnose
