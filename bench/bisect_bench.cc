// Simulated fusion-rule bisections: the oracle is a function of which rules are on, so the
// table measures the search itself. Prints trials and parallel rounds per case and checks
// the targets of the bisection issue; exits 1 if one is missed.
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

struct Cell {
  int runs = 0, right = 0, high = 0, wrong_high = 0;
  long trials = 0, rounds = 0;
  int max_trials = 0, max_to_answer = 0, max_rounds = 0;
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
      return TrialOutcome{fails ? Outcome::Fail : Outcome::Pass, 0, {}, {}, {}};
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
          if (!flaky && scenario.sets == 1 && scenario.size == 1 && slots == 1 && c.max_to_answer > budget)
            missed.push_back(where + ": " + std::to_string(c.max_to_answer) +
                             " trials to the answer > ceil(log2 N) + 3 = " + std::to_string(budget));
          if (!flaky && (c.right != c.runs || c.high != c.runs))
            missed.push_back(where + ": exact oracle, " + std::to_string(c.runs - c.right) + " wrong, " +
                             std::to_string(c.runs - c.high) + " not high confidence");
          if (flaky && c.wrong_high > 0)
            missed.push_back(where + ": flaky oracle, " + std::to_string(c.wrong_high) +
                             " wrong answers with high confidence");
        }
  std::printf(
      "\nsanity+srch: worst trials until the first answer (all-on, its repeat, all-off, searches), before\n"
      "the checks and confirmations counted in 'trials'.\n");
  if (missed.empty()) {
    std::printf("targets: all met\n");
    return 0;
  }
  std::printf("targets missed:\n");
  for (const auto& m : missed) std::printf("  %s\n", m.c_str());
  return 1;
}
