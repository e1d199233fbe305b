// Simulated fusion-rule bisections: the oracle is a function of which rules are on, so the
// table measures the search itself. Prints trials and parallel rounds per case and checks
// the targets of the bisection issue; exits 1 if one is missed. The exact oracle's numbers
// are the same every run (one run confirms each configuration); the flaky one's differ run
// to run, as a nondeterministic model's do (majority votes once outcomes disagree).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "orchestrator/bisect/bisector.h"

namespace {

using diagnose::bisect::Config;
using diagnose::bisect::Outcome;
using diagnose::bisect::TrialOutcome;
using RuleSets = std::set<std::set<std::string>>;

struct Scenario {
  const char* name;
  int sets;  // culprit sets
  int size;  // rules per set (> 1: they fail only together)
};
const Scenario kScenarios[] = {
    {"1", 1, 1}, {"2 independent", 2, 1}, {"3 independent", 3, 1}, {"2 interacting", 1, 2}, {"3 interacting", 1, 3}};
const int kSizes[] = {8, 32, 128, 512};
const int kSlots[] = {1, 2, 4};
constexpr double kFlakeRate = 0.10;
constexpr int kExactSeeds = 10;
constexpr int kFlakySeeds = 30;

std::string rule_name(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "FusionRule%03d", i);
  return name;
}

std::string join(const std::set<std::string>& rules) {
  std::string text;
  for (const auto& rule : rules) text += (text.empty() ? "" : " ") + rule;
  return text;
}

// A trial's error: the same every run when the oracle is exact, else with noise in its last digits.
double error_metric(bool fails, std::mt19937& noise, bool exact) {
  double error = fails ? 0.5 : 1e-6;
  return exact ? error : error * (1 + std::uniform_real_distribution<>(0, 1e-9)(noise));
}

struct Cell {
  int runs = 0, right = 0, high = 0, wrong_high = 0;
  long trials = 0, rounds = 0;
  int max_trials = 0, max_to_answer = 0, max_rounds = 0;

  // One bisection's result, `is_right` when it found the planted culprits.
  void add(const diagnose::bisect::Result& result, bool is_right) {
    bool is_high = result.confidence == diagnose::bisect::Confidence::High;
    ++runs;
    right += is_right;
    high += is_high;
    wrong_high += is_high && !is_right;
    trials += result.new_trials;
    rounds += result.rounds;
    max_trials = std::max(max_trials, result.new_trials);
    max_rounds = std::max(max_rounds, result.rounds);
  }
};

Cell run_cell(int n, int scenario_index, int slots, bool flaky) {
  const Scenario& scenario = kScenarios[scenario_index];
  std::vector<std::string> candidates;
  for (int i = 0; i < n; ++i) candidates.push_back(rule_name(i));
  Cell cell;
  int seeds = flaky ? kFlakySeeds : kExactSeeds;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::mt19937 placement(seed * 7919 + n);
    std::vector<std::string> shuffled = candidates;
    std::shuffle(shuffled.begin(), shuffled.end(), placement);
    RuleSets culprits;
    for (int s = 0; s < scenario.sets; ++s)
      culprits.insert(
          std::set<std::string>(shuffled.begin() + s * scenario.size, shuffled.begin() + (s + 1) * scenario.size));

    std::mt19937 noise(seed * 104729 + n * 31 + scenario_index * 7 + slots);
    std::bernoulli_distribution flip(flaky ? kFlakeRate : 0.0);
    diagnose::bisect::FunctionOracle oracle([&](const Config& off) {
      std::set<std::string> off_set(off.begin(), off.end());
      bool fails = std::any_of(culprits.begin(), culprits.end(), [&](const std::set<std::string>& set) {
        return std::none_of(set.begin(), set.end(), [&](const std::string& r) { return off_set.count(r) > 0; });
      });
      if (flip(noise)) fails = !fails;
      return TrialOutcome{
          fails ? Outcome::Fail : Outcome::Pass, 0, {{"max_abs_error", error_metric(fails, noise, !flaky)}}, {}, {}};
    });
    diagnose::bisect::Options options;
    options.slots = slots;
    diagnose::bisect::Result result = diagnose::bisect::bisect(candidates, oracle, options);

    RuleSets found;
    for (const auto& set : result.culprit_sets) found.insert(std::set<std::string>(set.rules.begin(), set.rules.end()));
    bool right = result.conclusion == diagnose::bisect::Conclusion::CulpritsFound && found == culprits;
    bool high = result.confidence == diagnose::bisect::Confidence::High;
    int trials = result.new_trials;
    int to_answer = result.trials_by_phase[diagnose::bisect::Phase::Sanity] +
                    result.trials_by_phase[diagnose::bisect::Phase::Search];
    ++cell.runs;
    cell.right += right;
    cell.high += high;
    if (high && !right) {
      ++cell.wrong_high;
      std::printf("wrong answer with high confidence: N=%d, %s, slots %d, seed %d: truth", n, scenario.name, slots,
                  seed);
      for (const auto& set : culprits) std::printf(" {%s}", join(set).c_str());
      std::printf(", answer: %s\n", result.summary.c_str());
    }
    cell.trials += trials;
    cell.rounds += result.rounds;
    cell.max_trials = std::max(cell.max_trials, trials);
    cell.max_to_answer = std::max(cell.max_to_answer, to_answer);
    cell.max_rounds = std::max(cell.max_rounds, result.rounds);
  }
  return cell;
}

// The subgraph_isolate step's node search: N FX nodes as candidates in graph order, a defect
// that needs some nodes compiled. One slot, the defaults; flaky: each trial's outcome flipped
// with probability 1/k.
using Nodes = std::vector<std::string>;
RuleSets one_node(const Nodes& nodes) { return {{nodes[nodes.size() * 3 / 8]}}; }
RuleSets two_nodes(const Nodes& nodes) { return {{nodes[nodes.size() / 8]}, {nodes[nodes.size() * 6 / 8]}}; }
RuleSets mul_add_pair(const Nodes& nodes) {
  size_t mul = nodes.size() * 3 / 8;
  return {{nodes[mul], nodes[mul + 1]}};
}

struct NodeCase {
  const char* name;
  RuleSets (*culprits)(const Nodes& nodes);
  int flip_k;  // 0: exact
  // An exact oracle's bound on the trials (bench/README.md): times_log2 * ceil(log2 N) + plus.
  int times_log2, plus;
};
const NodeCase kNodeCases[] = {
    {"1 node", one_node, 0, 1, 11},           {"2 independent", two_nodes, 0, 2, 16},
    {"mul+add pair", mul_add_pair, 0, 2, 19}, {"pair, flaky 1/10", mul_add_pair, 10},
    {"pair, flaky 1/5", mul_add_pair, 5},
};
const int kNodeSizes[] = {8, 64, 512};
constexpr int kNodeSeeds = 20;

void node_search_table(std::vector<std::string>& missed) {
  std::printf("\nsubgraph_isolate: nodes as candidates (1 slot, defaults)\n%5s  %-18s %14s  %7s  %7s  %10s\n", "N",
              "defect", "trials avg/max", "right", "high", "wrong+high");
  for (int n : kNodeSizes)
    for (const NodeCase& node_case : kNodeCases) {
      Nodes candidates;
      for (int i = 0; i < n; ++i) candidates.push_back("g0.n" + std::to_string(i));
      RuleSets culprits = node_case.culprits(candidates);
      int seeds = node_case.flip_k ? kNodeSeeds : 1;
      Cell cell;
      for (int seed = 1; seed <= seeds; ++seed) {
        std::mt19937 noise(seed * 7727 + n);
        std::bernoulli_distribution flip(node_case.flip_k ? 1.0 / node_case.flip_k : 0.0);
        diagnose::bisect::FunctionOracle oracle([&](const Config& eager) {
          std::set<std::string> eager_set(eager.begin(), eager.end());
          bool fails = std::any_of(culprits.begin(), culprits.end(), [&](const std::set<std::string>& set) {
            return std::none_of(set.begin(), set.end(), [&](const std::string& node) { return eager_set.count(node); });
          });
          if (flip(noise)) fails = !fails;
          return TrialOutcome{fails ? Outcome::Fail : Outcome::Pass,
                              0,
                              {{"max_abs_error", error_metric(fails, noise, !node_case.flip_k)}},
                              {},
                              {}};
        });
        diagnose::bisect::Options options;
        options.slots = 1;
        diagnose::bisect::Result result = diagnose::bisect::bisect(candidates, oracle, options);
        RuleSets found;
        for (const auto& set : result.culprit_sets) found.insert({set.rules.begin(), set.rules.end()});
        cell.add(result, result.conclusion == diagnose::bisect::Conclusion::CulpritsFound && found == culprits);
      }
      std::printf("%5d  %-18s %8.1f/%-5d  %3d/%-3d  %3d/%-3d  %10d\n", n, node_case.name,
                  double(cell.trials) / cell.runs, cell.max_trials, cell.right, cell.runs, cell.high, cell.runs,
                  cell.wrong_high);
      std::string where = std::string("nodes N=") + std::to_string(n) + " " + node_case.name;
      int bound = node_case.times_log2 * static_cast<int>(std::ceil(std::log2(n))) + node_case.plus;
      if (!node_case.flip_k && (cell.right != cell.runs || cell.high != cell.runs))
        missed.push_back(where + ": exact oracle, wrong or not high confidence");
      if (!node_case.flip_k && cell.max_trials > bound)
        missed.push_back(where + ": " + std::to_string(cell.max_trials) + " trials > " + std::to_string(bound));
      if (cell.wrong_high > 0) missed.push_back(where + ": wrong answers with high confidence");
    }
}

// `diagnose bisect -- CMD` judged by exit status: a trial's only number is its exit status, so
// the all-on runs agree exactly when the command is deterministic. One culprit among 28 rules
// at each position: trials against bisect::one_culprit_floor; the same with each trial's
// outcome flipped with probability 0.1 (10 seeds per position).
void exit_code_table(std::vector<std::string>& missed) {
  constexpr int n = 28;
  std::vector<std::string> candidates;
  for (int i = 0; i < n; ++i) candidates.push_back(rule_name(i));
  const int floor = diagnose::bisect::one_culprit_floor(n, 1 + diagnose::bisect::Options{}.baseline_repeats);
  std::printf("\ndiagnose bisect, exit-code oracle: one culprit among N = %d at each position (floor %d trials)\n", n,
              floor);
  std::printf("%5s  %-9s %4s  %14s  %14s  %7s  %7s  %10s\n", "slots", "oracle", "runs", "trials avg/max",
              "rounds avg/max", "right", "high", "wrong+high");
  for (bool flaky : {false, true})
    for (int slots : {1, 2}) {
      Cell cell;
      for (int culprit = 0; culprit < n; ++culprit)
        for (int seed = 1; seed <= (flaky ? 10 : 1); ++seed) {
          std::mt19937 noise(seed * 6151 + culprit * 17 + slots);
          std::bernoulli_distribution flip(flaky ? kFlakeRate : 0.0);
          diagnose::bisect::FunctionOracle oracle([&](const Config& off) {
            bool fails = !std::binary_search(off.begin(), off.end(), candidates[culprit]);
            if (flip(noise)) fails = !fails;
            return TrialOutcome{fails ? Outcome::Fail : Outcome::Pass,
                                0,
                                {{diagnose::bisect::kExitStatusMetric, fails ? 1 : 0}},
                                {},
                                {}};
          });
          diagnose::bisect::Options options;
          options.slots = slots;
          diagnose::bisect::Result result = diagnose::bisect::bisect(candidates, oracle, options);
          cell.add(result, result.conclusion == diagnose::bisect::Conclusion::CulpritsFound &&
                               result.culprits_off() == Config{candidates[culprit]});
        }
      std::printf("%5d  %-9s %4d  %8.1f/%-5d  %8.1f/%-5d  %3d/%-3d  %3d/%-3d  %10d\n", slots,
                  flaky ? "flaky 10%" : "exact", cell.runs, double(cell.trials) / cell.runs, cell.max_trials,
                  double(cell.rounds) / cell.runs, cell.max_rounds, cell.right, cell.runs, cell.high, cell.runs,
                  cell.wrong_high);
      std::string where = "exit code, N=28, slots=" + std::to_string(slots);
      if (!flaky && slots == 1 && cell.max_trials > floor)
        missed.push_back(where + ": " + std::to_string(cell.max_trials) + " trials > the floor " +
                         std::to_string(floor));
      if (!flaky && (cell.right != cell.runs || cell.high != cell.runs))
        missed.push_back(where + ": exact oracle, wrong or not high confidence");
    }
}

}  // namespace

int main() {
  std::vector<std::string> missed;
  std::printf("%5s  %-14s %5s  %-9s %4s  %14s  %11s  %14s  %7s  %7s  %10s\n", "N", "culprits", "slots", "oracle",
              "runs", "trials avg/max", "sanity+srch", "rounds avg/max", "right", "high", "wrong+high");
  for (bool flaky : {false, true})
    for (int n : kSizes)
      for (int scenario_index = 0; scenario_index < int(std::size(kScenarios)); ++scenario_index)
        for (int slots : kSlots) {
          const Scenario& scenario = kScenarios[scenario_index];
          Cell c = run_cell(n, scenario_index, slots, flaky);
          std::printf("%5d  %-14s %5d  %-9s %4d  %8.1f/%-5d  %11d  %8.1f/%-5d  %3d/%-3d  %3d/%-3d  %10d\n", n,
                      scenario.name, slots, flaky ? "flaky 10%" : "exact", c.runs, double(c.trials) / c.runs,
                      c.max_trials, c.max_to_answer, double(c.rounds) / c.runs, c.max_rounds, c.right, c.runs, c.high,
                      c.runs, c.wrong_high);
          std::string where = "N=" + std::to_string(n) + " " + scenario.name + " slots=" + std::to_string(slots);
          int budget = static_cast<int>(std::ceil(std::log2(n))) + 3;
          bool one_culprit = !flaky && scenario.sets == 1 && scenario.size == 1 && slots == 1;
          if (one_culprit && c.max_to_answer > budget)
            missed.push_back(where + ": " + std::to_string(c.max_to_answer) +
                             " trials to the answer > ceil(log2 N) + 3 = " + std::to_string(budget));
          if (one_culprit && c.max_trials > budget + 1)
            missed.push_back(where + ": " + std::to_string(c.max_trials) +
                             " trials all told > ceil(log2 N) + 4 = " + std::to_string(budget + 1));
          if (!flaky && (c.right != c.runs || c.high != c.runs))
            missed.push_back(where + ": exact oracle, " + std::to_string(c.runs - c.right) + " wrong, " +
                             std::to_string(c.runs - c.high) + " not high confidence");
          if (flaky && c.wrong_high > 0)
            missed.push_back(where + ": flaky oracle, " + std::to_string(c.wrong_high) +
                             " wrong answers with high confidence");
        }
  std::printf(
      "\nsanity+srch: worst trials until the first answer (all-on, its repeat, all-off unless the all-on\n"
      "runs agree bit for bit, searches), before the checks and confirmations counted in 'trials'.\n");
  node_search_table(missed);
  exit_code_table(missed);
  if (missed.empty()) {
    std::printf("targets: all met\n");
    return 0;
  }
  std::printf("targets missed:\n");
  for (const auto& m : missed) std::printf("  %s\n", m.c_str());
  return 1;
}
