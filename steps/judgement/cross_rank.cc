#include "steps/judgement/cross_rank.h"

#include <algorithm>
#include <map>
#include <set>

#include <sstream>
#include "compare/divergence.h"

#include "compare/match.h"

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

namespace {

// The comparison core on two rank dumps of one side, the reference rank as the golden.
compare::CompareResult compare_rank_dumps(const std::string& reference, const std::string& other,
                                          const compare::CompareOptions& options) {
  compare::CompareOptions pair;
  pair.golden_path = reference;
  pair.my_path = other;
  pair.tolerances = options.tolerances;
  pair.threads = options.threads;
  return compare::run_compare(pair);
}

bool equal_elementwise(const compare::Row& row) {
  return row.metrics && row.metrics->max_absolute_error == 0 && row.metrics->special_mismatches == 0;
}

std::string mismatch_detail(const compare::Row& row) {
  std::ostringstream out;
  out << (row.spec.direction == compare::Direction::Input ? "input " : "output ") << row.spec.index;
  if (row.metrics) {
    out.precision(3);
    out << ", max abs difference " << row.metrics->max_absolute_error << " (" << row.metrics->allclose_violations
        << " of " << row.metrics->elements << " elements beyond the tolerance";
    if (row.metrics->special_mismatches > 0) out << ", " << row.metrics->special_mismatches << " NaN/Inf apart";
    out << ")";
  }
  return out.str();
}

std::string tensors_text(uint64_t n) { return std::to_string(n) + (n == 1 ? " tensor" : " tensors"); }

std::string ranks_span(int ranks) { return ranks == 2 ? "ranks 0 and 1" : "ranks 0–" + std::to_string(ranks - 1); }

// Which of the reference rank 0 and the ranks `differing` from it at `key` departs: the only one
// of them wrong against its golden self; else the odd one out among three or more ranks.
RankMismatch departing_of(const std::string& key, const std::set<int>& differing, int ranks,
                          const compare::CompareResult& judged) {
  std::set<int> wrong_alone;
  for (const compare::RowGroup& group : judged.groups)
    for (const compare::Row& row : group.rows)
      if (row.spec.golden_key == key && row.verdict == compare::Verdict::Fail &&
          (row.spec.rank == 0 || differing.count(row.spec.rank)))
        wrong_alone.insert(row.spec.rank);
  RankMismatch m;
  m.rank = *differing.begin();
  if (wrong_alone.size() == 1) {
    m.rank = *wrong_alone.begin();
    m.why = "the only one of them that differs from its golden self there";
  } else if (ranks >= 3 && static_cast<int>(differing.size()) == ranks - 1) {
    m.rank = 0;
    m.why = "every other rank differs from it there";
  } else if (ranks >= 3) {
    m.why = "the other ranks agree with rank 0 there";
  } else {
    m.why = wrong_alone.empty() ? "both agree with their golden selves there; rank 0 is the reference"
                                : "both differ from their golden selves there; rank 0 is the reference";
  }
  m.reference = m.rank == 0 ? *differing.begin() : 0;
  return m;
}

}  // namespace

std::optional<RankAgreement> compare_ranks(const std::string& golden, const std::string& target,
                                           const compare::CompareOptions& options,
                                           const compare::CompareResult& judged) {
  if (options.rank) return std::nullopt;
  const std::map<int, std::string> golden_ranks = compare::manifest_ranks(golden);
  const std::map<int, std::string> target_ranks = compare::manifest_ranks(target);
  if (golden_ranks.size() < 2 || target_ranks.size() < 2 || !golden_ranks.count(0) || !target_ranks.count(0))
    return std::nullopt;
  RankAgreement agreement;
  agreement.ranks = 1;
  std::map<std::string, std::set<int>> differing;         // by key, the ranks that differ from rank 0 there
  std::optional<std::pair<int64_t, compare::Row>> first;  // the first differing row in execution order
  for (const auto& [rank, dir] : target_ranks) {
    const auto golden_rank = golden_ranks.find(rank);
    if (rank <= 0 || golden_rank == golden_ranks.end()) continue;
    ++agreement.ranks;
    std::set<std::string> agreed;
    for (const compare::RowGroup& group : compare_rank_dumps(golden_ranks.at(0), golden_rank->second, options).groups)
      for (const compare::Row& row : group.rows)
        if (row.verdict == compare::Verdict::Pass) agreed.insert(row.spec.golden_key);
    for (const compare::RowGroup& group : compare_rank_dumps(target_ranks.at(0), dir, options).groups)
      for (const compare::Row& row : group.rows) {
        const bool judged_row = row.verdict == compare::Verdict::Pass || row.verdict == compare::Verdict::Fail;
        if (!judged_row || !agreed.count(row.spec.golden_key)) continue;
        ++agreement.compared;
        if (equal_elementwise(row)) ++agreement.exact;
        if (row.verdict == compare::Verdict::Pass) continue;
        ++agreement.differ;
        differing[row.spec.golden_key].insert(rank);
        if (!first || row.spec.order < first->first) first.emplace(row.spec.order, row);
      }
  }
  if (first) {
    const compare::Row& row = first->second;
    agreement.first = departing_of(row.spec.golden_key, differing[row.spec.golden_key], agreement.ranks, judged);
    agreement.first->op = row.spec.op_key;
    agreement.first->detail = mismatch_detail(row);
    agreement.first->final_output = row.spec.final_output || row.spec.state;
  }
  return agreement;
}

std::string RankAgreement::text() const {
  const std::string span = ranks_span(ranks);
  if (compared == 0) return "no tensor should be identical across " + span + " (their golden dumps agree on none)";
  const std::string exactly = " (" + std::to_string(exact) + " equal element for element)";
  if (!first)
    return span + " agree on the " + tensors_text(compared) + " that should be identical across them" + exactly;
  return span + " disagree on " + std::to_string(differ) + " of " + tensors_text(compared) +
         " that should be identical across them" + exactly + ": rank " + std::to_string(first->rank) +
         " departs from rank " + std::to_string(first->reference) + " first at " + first->op + ", " + first->detail +
         "; " + first->why;
}

nlohmann::json RankAgreement::to_json() const {
  nlohmann::json out = {{"ranks", ranks}, {"compared", compared}, {"exact", exact}, {"differ", differ}};
  if (first)
    out["first"] = {{"rank", first->rank},
                    {"reference", first->reference},
                    {"op", first->op},
                    {"detail", first->detail},
                    {"why", first->why}};
  return out;
}

std::string RankDeparture::text() const {
  if (mismatch)
    return "rank " + std::to_string(rank) + " departs first, at " + op + " where it should agree with rank " +
           std::to_string(mismatch->reference) + " (" + mismatch->detail + "; " + mismatch->why + ")";
  std::string text = "rank " + std::to_string(rank) + " departs first, at " + op;
  for (const Receiving& other : receiving)
    text += "; rank " + std::to_string(other.rank) + " receives its error through the collective " + other.collective +
            (other.inputs == compare::SourceInputs::Passed ? std::string(" (whose own inputs pass)")
                                                           : " (" + compare::source_inputs_text(other.inputs) + ")");
  return text;
}

namespace {

// The one rank whose error starts at an op of its own while every other failing rank's starts at a
// collective.
std::optional<RankDeparture> departing_on_its_own(const std::vector<compare::Divergence>& divergences) {
  // Each rank's first op-level divergence (graphs in execution order), and where its error starts.
  std::map<int, std::pair<std::string, compare::SourceInputs>> starts;
  for (const compare::Divergence& d : divergences) {
    if (d.rank < 0 || d.graph < 0 || starts.count(d.rank)) continue;
    starts[d.rank] = d.source_ops.empty() ? std::make_pair(d.first_failing_op, compare::SourceInputs::NotDumped)
                                          : std::make_pair(d.source_ops.front(), d.source_inputs.empty()
                                                                                     ? compare::SourceInputs::NotDumped
                                                                                     : d.source_inputs.front());
  }
  if (starts.size() < 2) return std::nullopt;
  std::optional<RankDeparture> departure;
  std::vector<RankDeparture::Receiving> receiving;
  for (const auto& [rank, start] : starts) {
    const std::string& op = start.first;
    if (collective_op(op)) {
      receiving.push_back({rank, op, start.second});
    } else {
      if (departure) return std::nullopt;  // more than one rank goes wrong on its own
      departure = RankDeparture{rank, op, {}, std::nullopt};
    }
  }
  if (departure) departure->receiving = std::move(receiving);
  return departure;
}

}  // namespace

std::optional<RankDeparture> departing_rank(const std::vector<compare::Divergence>& divergences,
                                            const std::optional<RankAgreement>& agreement) {
  std::optional<RankDeparture> departure = departing_on_its_own(divergences);
  if (!departure && agreement && agreement->first)
    departure = RankDeparture{agreement->first->rank, agreement->first->op, {}, agreement->first};
  return departure;
}

}  // namespace diagnose
