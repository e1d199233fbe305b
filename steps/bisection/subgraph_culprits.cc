#include "steps/bisection/subgraph_culprits.h"

#include <algorithm>
#include <map>
#include <set>

#include "orchestrator/util/strings.h"

namespace diagnose {

std::vector<std::string> grouped_culprits(const std::vector<SubgraphCulprit>& culprits) {
  std::vector<std::string> order;
  std::map<std::string, size_t> count;
  std::map<std::string, std::set<std::string>> graphs;
  for (const SubgraphCulprit& c : culprits) {
    if (count[c.ops]++ == 0) order.push_back(c.ops);
    for (const std::string& node : c.nodes) graphs[c.ops].insert(node.substr(0, node.find('.')));
  }
  std::vector<std::string> out;
  for (const std::string& ops : order) {
    if (count[ops] == 1) {
      out.push_back(ops);
      continue;
    }
    const std::vector<std::string> in(graphs[ops].begin(), graphs[ops].end());
    out.push_back(ops + " (" + std::to_string(count[ops]) + " subgraphs, graph" + (in.size() > 1 ? "s " : " ") +
                  joined(in) + ")");
  }
  return out;
}

}  // namespace diagnose
