// The candidates of a node search (the subgraph_isolate step): the FX nodes of the graphs a
// backend received, ids `g<k>.<node name>`, in graph order. The bisection (bisector.h) finds
// the sets of nodes that must be compiled for the failure; a set's span is the minimal
// failing subgraph: the contiguous node range that holds it, graph by graph.
#pragma once

#include <string>
#include <vector>

namespace diagnose::bisect {

// The graph of a node id: "g0" of "g0.mul_1" (the whole id when it has no dot).
std::string graph_of(const std::string& node);

// Within each graph `culprits` touch, every candidate from its first to its last culprit, in
// candidate order. Throws std::invalid_argument naming a culprit that is not a candidate.
std::vector<std::string> subgraph_span(const std::vector<std::string>& candidates,
                                       const std::vector<std::string>& culprits);

}  // namespace diagnose::bisect
