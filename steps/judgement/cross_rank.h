// Across ranks (the role msprobe's compare -da plays): when several ranks of a run fail, which
// rank departs first. A rank whose error starts at a collective (torch.distributed's ops:
// _c10d_functional.*, c10d.*) whose own inputs pass received the error from another rank; the
// rank whose error starts, in its execution order, at an op of its own is where it departs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"

namespace diagnose {

// Whether a compare row's op ("wait_tensor-_c10d_functional.wait_tensor.default") is a collective.
bool collective_op(const std::string& op);

// The ranks with a failing row (op-level or final outputs), ascending; empty without ranks.
std::vector<int> failing_ranks(const std::vector<compare::Divergence>& divergences);
// "0, 1"
std::string ranks_text(const std::vector<int>& ranks);

// Ranks compared with each other. A tensor should be identical on every rank where the golden
// dump's ranks agree on it (same key, shape and dtype, within the tolerance): an all_reduce's or
// all_gather's output, a replicated activation, a tensor-parallel model's final outputs; not a
// shard, not a reduce_scatter's output. Those tensors of the target are compared between rank 0
// (the reference) and each other rank under the same key (op, direction, index, graph, call),
// within the step's tolerance for their dtype rather than bit for bit: a collective may sum in a
// different order on each rank (tree and recursive-doubling all_reduce), so exact equality is
// counted, not required.
struct RankMismatch {
  int rank = -1;              // the rank that departs from the others
  int reference = 0;          // the rank it was compared with
  std::string op;             // the first op (in execution order) where it does
  std::string detail;         // "output 0, max abs difference 0.5 in 4 of 16 elements"
  std::string why;            // how the departing rank was told from the one it differs from
  bool final_output = false;  // a final output or state of the model, not an op
};

struct RankAgreement {
  int ranks = 0;          // ranks compared, the reference included
  uint64_t compared = 0;  // (rank 0, rank R) tensor pairs that should be identical, judged
  uint64_t exact = 0;     // of them equal element for element
  uint64_t differ = 0;    // of them beyond the tolerance
  std::optional<RankMismatch> first;
  std::string text() const;
  nlohmann::json to_json() const;
};

// Compares the target's ranks with each other (`judged`: golden against target per rank, which
// tells a departing rank from the one it differs from); nullopt when either side has fewer than
// two ranks or `only_rank` is set.
std::optional<RankAgreement> compare_ranks(const std::string& golden, const std::string& target,
                                           const compare::CompareOptions& options,
                                           const compare::CompareResult& judged);

struct RankDeparture {
  int rank = -1;
  std::string op;  // where its error starts
  // The other failing ranks, each with the collective where the error reaches it.
  struct Receiving {
    int rank = -1;
    std::string collective;
    compare::SourceInputs inputs = compare::SourceInputs::NotDumped;  // what is known of its own inputs
  };
  std::vector<Receiving> receiving;
  // Set when the departure was found by comparing ranks with each other.
  std::optional<RankMismatch> mismatch;
  std::string text() const;  // "rank 1 departs first at OP; rank 0 receives it at COLLECTIVE"
};

// The one rank whose error starts at an op of its own while every other failing rank's starts at a
// collective; else the first rank that departs from the others where they should agree
// (`agreement`); nullopt when neither says.
std::optional<RankDeparture> departing_rank(const std::vector<compare::Divergence>& divergences,
                                            const std::optional<RankAgreement>& agreement = std::nullopt);

}  // namespace diagnose
