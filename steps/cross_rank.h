// Across ranks (the role msprobe's compare -da plays): when several ranks of a run fail, which
// rank departs first. A rank whose error starts at a collective (torch.distributed's ops:
// _c10d_functional.*, c10d.*) whose own inputs pass received the error from another rank; the
// rank whose error starts, in its execution order, at an op of its own is where it departs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace diagnose {

// Whether a compare row's op ("wait_tensor-_c10d_functional.wait_tensor.default") is a collective.
bool collective_op(const std::string& op);

// The ranks with a failing row (op-level or final outputs), ascending; empty without ranks.
std::vector<int> failing_ranks(const std::vector<compare::Divergence>& divergences);
// "0, 1"
std::string ranks_text(const std::vector<int>& ranks);

struct RankDeparture {
  int rank = -1;
  std::string op;  // where its error starts
  // The other failing ranks, each with the collective where the error reaches it.
  std::vector<std::pair<int, std::string>> receiving;
  std::string text() const;  // "rank 1 departs first at OP; rank 0 receives it at COLLECTIVE"
};

// The one rank whose error starts at an op of its own while every other failing rank's starts at a
// collective; nullopt when fewer than two ranks fail or when more than one departs on its own.
std::optional<RankDeparture> departing_rank(const std::vector<compare::Divergence>& divergences);

}  // namespace diagnose
