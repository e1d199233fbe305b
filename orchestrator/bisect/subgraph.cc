#include "orchestrator/bisect/subgraph.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace diagnose::bisect {

std::string graph_of(const std::string& node) { return node.substr(0, node.find('.')); }

std::vector<std::string> subgraph_span(const std::vector<std::string>& candidates,
                                       const std::vector<std::string>& culprits) {
  std::map<std::string, std::pair<size_t, size_t>> range_by_graph;  // first and last position
  for (const std::string& culprit : culprits) {
    auto at = std::find(candidates.begin(), candidates.end(), culprit);
    if (at == candidates.end()) throw std::invalid_argument("subgraph_span: '" + culprit + "' is not a candidate");
    size_t position = at - candidates.begin();
    auto [range, added] = range_by_graph.emplace(graph_of(culprit), std::make_pair(position, position));
    if (!added) range->second = {std::min(range->second.first, position), std::max(range->second.second, position)};
  }
  std::vector<std::string> span;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto range = range_by_graph.find(graph_of(candidates[i]));
    if (range != range_by_graph.end() && range->second.first <= i && i <= range->second.second)
      span.push_back(candidates[i]);
  }
  return span;
}

}  // namespace diagnose::bisect
