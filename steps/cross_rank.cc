#include "steps/cross_rank.h"

#include <algorithm>
#include <map>

namespace diagnose {

bool collective_op(const std::string& op) {
  for (const char* name_space : {"_c10d_functional.", "c10d_functional.", "c10d."}) {
    size_t at = op.find(name_space);
    // at the start of the op's name, or of the op after a compare row's "node-" prefix
    if (at != std::string::npos && (at == 0 || op[at - 1] == '-')) return true;
  }
  return false;
}

std::vector<int> failing_ranks(const std::vector<compare::Divergence>& divergences) {
  std::vector<int> ranks;
  for (const compare::Divergence& d : divergences)
    if (d.rank >= 0 && std::find(ranks.begin(), ranks.end(), d.rank) == ranks.end()) ranks.push_back(d.rank);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

std::string RankDeparture::text() const {
  std::string text = "rank " + std::to_string(rank) + " departs first, at " + op;
  for (const auto& [other, collective] : receiving)
    text += "; rank " + std::to_string(other) + " receives its error through the collective " + collective +
            " (whose own inputs pass)";
  return text;
}

std::optional<RankDeparture> departing_rank(const std::vector<compare::Divergence>& divergences) {
  // Each rank's first op-level divergence (graphs in execution order), and where its error starts.
  std::map<int, std::string> starts;
  for (const compare::Divergence& d : divergences) {
    if (d.rank < 0 || d.graph < 0 || starts.count(d.rank)) continue;
    starts[d.rank] = d.source_ops.empty() ? d.first_failing_op : d.source_ops.front();
  }
  if (starts.size() < 2) return std::nullopt;
  std::optional<RankDeparture> departure;
  std::vector<std::pair<int, std::string>> receiving;
  for (const auto& [rank, op] : starts) {
    if (collective_op(op)) {
      receiving.emplace_back(rank, op);
    } else {
      if (departure) return std::nullopt;  // more than one rank goes wrong on its own
      departure = RankDeparture{rank, op, {}};
    }
  }
  if (departure) departure->receiving = std::move(receiving);
  return departure;
}

}  // namespace diagnose
