#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <set>

#include "orchestrator/bisect/bisector.h"

using namespace diagnose::bisect;

namespace {

using RuleSet = std::set<std::string>;

std::vector<std::string> rules(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("Rule" + std::to_string(100 + i));
  return names;
}

// A model whose precision fails when every rule of some culprit set is on. Every rule that is
// on fires; rules in `stuck_on` fire (and act) even when switched off.
struct SimulatedModel {
  SimulatedModel(std::vector<std::string> rules, std::vector<RuleSet> culprit_sets)
      : candidates(std::move(rules)), culprits(std::move(culprit_sets)) {}

  std::vector<std::string> candidates;
  std::vector<RuleSet> culprits;
  RuleSet stuck_on;
  std::function<bool(const RuleSet& on)> crashes = [](const RuleSet&) { return false; };
  double flake_rate = 0;
  // The numbers differ from run to run (nondeterministic kernels) even where the outcome does not.
  bool numbers_vary = false;
  std::mt19937 rng{12345};

  std::vector<size_t> batch_sizes;
  int trials = 0;

  RuleSet on_for(const Config& off) const {
    RuleSet on(stuck_on);
    for (const auto& rule : candidates)
      if (std::find(off.begin(), off.end(), rule) == off.end()) on.insert(rule);
    return on;
  }

  TrialOutcome run(const Config& off) {
    ++trials;
    RuleSet on = on_for(off);
    TrialOutcome outcome;
    outcome.fired_rules = std::vector<std::string>(on.begin(), on.end());
    outcome.duration_s = 0.5;
    if (crashes(on)) {
      outcome.outcome = Outcome::Crash;
      return outcome;
    }
    bool fails = std::any_of(culprits.begin(), culprits.end(), [&](const RuleSet& set) {
      return std::all_of(set.begin(), set.end(), [&](const std::string& r) { return on.count(r) > 0; });
    });
    if (flake_rate > 0 && std::bernoulli_distribution(flake_rate)(rng)) fails = !fails;
    outcome.outcome = fails ? Outcome::Fail : Outcome::Pass;
    outcome.metrics["max_abs_error"] = fails ? 0.5 : 1e-6;
    if (numbers_vary) outcome.metrics["max_abs_error"] *= 1 + std::uniform_real_distribution<>(0, 1e-3)(rng);
    return outcome;
  }
};

class ModelOracle : public Oracle {
 public:
  explicit ModelOracle(SimulatedModel& model) : model_(model) {}
  std::vector<TrialOutcome> run_batch(const std::vector<Config>& configs) override {
    model_.batch_sizes.push_back(configs.size());
    std::vector<TrialOutcome> outcomes;
    for (const auto& config : configs) outcomes.push_back(model_.run(config));
    return outcomes;
  }

 private:
  SimulatedModel& model_;
};

// The settings these tests were written for: one trial at a time, four confirmations, a
// budget no search here reaches (the defaults are what the command and the step use).
Options sequential_options() {
  Options options;
  options.slots = 1;
  options.confirmations = 4;
  options.max_trials = 1000;
  return options;
}

Result run_bisect(SimulatedModel& model, Options options = sequential_options(),
                  const std::vector<TrialRecord>& log = {}) {
  ModelOracle oracle(model);
  return bisect(model.candidates, oracle, options, log);
}

std::set<RuleSet> found_sets(const Result& result) {
  std::set<RuleSet> sets;
  for (const auto& set : result.culprit_sets) sets.insert(RuleSet(set.rules.begin(), set.rules.end()));
  return sets;
}

// Trials of the configuration with exactly `on` on, among the candidates (in `phase`; any when none).
int trials_of(const Result& result, const std::vector<std::string>& candidates, const RuleSet& on,
              std::optional<Phase> phase = std::nullopt) {
  Config off;
  for (const auto& rule : candidates)
    if (!on.count(rule)) off.push_back(rule);
  std::sort(off.begin(), off.end());
  return static_cast<int>(std::count_if(result.trials.begin(), result.trials.end(), [&](const TrialRecord& t) {
    return t.off == off && (!phase || t.phase == *phase);
  }));
}

// The numbers of the all-on runs differ: every confirmation takes four agreeing runs.
TEST(Bisector, OneCulpritAmongManyInLogTrials) {
  SimulatedModel model{rules(64), {{"Rule137"}}};
  model.numbers_vary = true;
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::CulpritsFound) << result.summary;
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule137"}}));
  EXPECT_TRUE(result.verified);
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_FALSE(result.nondeterministic);
  // all on twice, all off, then log2(64) = 6 prefix trials.
  EXPECT_EQ(result.trials_by_phase[Phase::Sanity], 3);
  EXPECT_EQ(result.trials_by_phase[Phase::Search], 6);
  // culprit alone, everything but the culprit: checked once, then run until four runs agree.
  EXPECT_EQ(result.trials_by_phase[Phase::Check], 2);
  EXPECT_EQ(result.trials_by_phase[Phase::Verify], 6);
  EXPECT_EQ(result.new_trials, 17);
  EXPECT_EQ(model.trials, 17);
  EXPECT_EQ(result.rounds, 17);  // one slot: one trial per round
  EXPECT_EQ(result.culprits_off(), (Config{"Rule137"}));

  // The replay pair differs in the culprit only: off in the passing one, on in the failing one.
  const CulpritSet& set = result.culprit_sets.front();
  Config difference;
  std::set_difference(set.last_passing.begin(), set.last_passing.end(), set.first_failing.begin(),
                      set.first_failing.end(), std::back_inserter(difference));
  EXPECT_EQ(difference, (Config{"Rule137"}));
  EXPECT_EQ(set.last_passing.size(), set.first_failing.size() + 1);
}

// The all-on runs agree bit for bit: one run confirms each configuration and all off is implied
// by everything but the culprit passing: all on twice, log2(64) = 6 prefix trials, the culprit
// alone and everything but the culprit.
TEST(Bisector, BitwiseDeterministicOracleConfirmsWithOneRun) {
  SimulatedModel model{rules(64), {{"Rule137"}}};
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule137"}}));
  EXPECT_TRUE(result.verified);
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_EQ(result.trials_by_phase[Phase::Sanity], 2);
  EXPECT_EQ(result.trials_by_phase[Phase::Search], 6);
  EXPECT_EQ(result.trials_by_phase[Phase::Check], 2);
  EXPECT_EQ(result.trials_by_phase[Phase::Verify], 0);
  EXPECT_EQ(model.trials, 10);
  EXPECT_EQ(trials_of(result, model.candidates, {}), 0);
  bool says_why = std::any_of(result.confidence_notes.begin(), result.confidence_notes.end(),
                              [](const std::string& n) { return n.find("bit for bit") != std::string::npos; });
  EXPECT_TRUE(says_why);
}

// One culprit among N, anywhere: at most ceil(log2 N) + 4 trials all told with one slot (all
// on twice, the search, the culprit alone and everything but it; either check is a search
// trial when the culprit is first or last), and never more with two.
TEST(Bisector, DeterministicTrialCountBoundForEveryN) {
  for (int n = 1; n <= 64; ++n) {
    int bound = static_cast<int>(std::ceil(std::log2(n))) + 4;
    for (int position = 0; position < n; ++position)
      for (int slots : {1, 2}) {
        SimulatedModel model{rules(n), {{"Rule" + std::to_string(100 + position)}}};
        Options options = sequential_options();
        options.slots = slots;
        Result result = run_bisect(model, options);
        ASSERT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule" + std::to_string(100 + position)}}))
            << "N=" << n << " position " << position << " slots " << slots;
        ASSERT_EQ(result.confidence, Confidence::High) << "N=" << n << " position " << position;
        if (slots == 1) {
          ASSERT_LE(model.trials, bound) << "N=" << n << " position " << position;
        }
      }
  }
}

TEST(Bisector, EveryPositionAmongSeventeen) {
  for (int position = 0; position < 17; ++position) {
    SimulatedModel model{rules(17), {{"Rule" + std::to_string(100 + position)}}};
    Result result = run_bisect(model);
    EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule" + std::to_string(100 + position)}})) << position;
    EXPECT_LE(result.trials_by_phase[Phase::Sanity] + result.trials_by_phase[Phase::Search], 5 + 3) << position;
  }
}

TEST(Bisector, TwoRulesThatOnlyFailTogether) {
  SimulatedModel model{rules(32), {{"Rule105", "Rule121"}}};
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule105", "Rule121"}}));
  EXPECT_TRUE(result.verified);
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_NE(result.summary.find("fail only together"), std::string::npos) << result.summary;
  // Verification: the pair fails, each member alone passes, everything but the pair passes.
  EXPECT_GE(trials_of(result, model.candidates, {"Rule105", "Rule121"}), 1);
  EXPECT_GE(trials_of(result, model.candidates, {"Rule105"}), 1);
  EXPECT_GE(trials_of(result, model.candidates, {"Rule121"}), 1);
  EXPECT_EQ(result.culprits_off(), (Config{"Rule105", "Rule121"}));
}

// A user's pass and its gate (Options::gates: the pass runs only with the gate on) that fail only
// together, among nine rules as Inductor's are, two slots as the standard workflow has: the pair
// alone on fails, the pass is found with its gate: 5 trials in 3 rounds where the search of every
// rule took 14 in 8 (both with the two all-on runs, which the standard workflow shares with earlier
// steps). The pass alone on runs nothing (its gate is off): never tried, where it took a sixth trial
// when the bisector knew the pair only as suspects.
TEST(Bisector, SuspectsThatFailTogetherAreFoundInAFewTrials) {
  SimulatedModel searched{rules(9), {{"Rule103", "Rule108"}}};
  Options options = sequential_options();
  options.slots = 2;
  const Result without = run_bisect(searched, options);
  SimulatedModel suspected{rules(9), {{"Rule103", "Rule108"}}};
  options.gates = {{"Rule108", "Rule103"}};
  const Result with = run_bisect(suspected, options);
  for (const Result* result : {&without, &with}) {
    EXPECT_EQ(found_sets(*result), (std::set<RuleSet>{{"Rule103", "Rule108"}}));
    EXPECT_TRUE(result->verified);
    EXPECT_EQ(result->confidence, Confidence::High);
  }
  EXPECT_EQ(searched.trials, 14);
  EXPECT_EQ(suspected.trials, 5);
  EXPECT_EQ(without.rounds, 8);
  EXPECT_EQ(with.rounds, 3);
  EXPECT_EQ(trials_of(with, suspected.candidates, {"Rule103", "Rule108"}, Phase::Search), 1);
  EXPECT_EQ(trials_of(with, suspected.candidates, {"Rule103"}), 1);  // the gate alone: Inductor's own passes
  EXPECT_EQ(trials_of(with, suspected.candidates, {"Rule108"}), 0);  // the pass alone runs nothing
  // the gate alone failing is Inductor's own passes, not the user's: the pass is not blamed
  SimulatedModel gate{rules(9), {{"Rule103"}}};
  EXPECT_EQ(found_sets(run_bisect(gate, options)), (std::set<RuleSet>{{"Rule103"}}));
  // suspects that are not the culprit cost their one trial and the search goes on as before
  SimulatedModel elsewhere{rules(9), {{"Rule101"}}};
  EXPECT_EQ(found_sets(run_bisect(elsewhere, options)), (std::set<RuleSet>{{"Rule101"}}));
}

TEST(Bisector, ThreeRulesThatOnlyFailTogether) {
  SimulatedModel model{rules(40), {{"Rule101", "Rule117", "Rule139"}}};
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule101", "Rule117", "Rule139"}}));
  EXPECT_EQ(result.confidence, Confidence::High);
}

TEST(Bisector, TwoIndependentCulprits) {
  SimulatedModel model{rules(32), {{"Rule110"}, {"Rule126"}}};
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule110"}, {"Rule126"}}));
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_EQ(result.culprits_off(), (Config{"Rule110", "Rule126"}));
  // Each culprit alone fails; both off passes.
  EXPECT_GE(trials_of(result, model.candidates, {"Rule110"}), 1);
  EXPECT_GE(trials_of(result, model.candidates, {"Rule126"}), 1);
}

TEST(Bisector, ThreeCulpritSetsOfMixedKinds) {
  SimulatedModel model{rules(48), {{"Rule103"}, {"Rule120", "Rule131"}, {"Rule146"}}};
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule103"}, {"Rule120", "Rule131"}, {"Rule146"}}));
  EXPECT_TRUE(result.verified);
  EXPECT_EQ(result.confidence, Confidence::High);
}

TEST(Bisector, NoFailureWhenAllOnPasses) {
  SimulatedModel model{rules(16), {}};
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::NoFailure);
  EXPECT_TRUE(result.culprit_sets.empty());
  EXPECT_NE(result.summary.find("no failure to bisect"), std::string::npos);
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_EQ(result.trials_by_phase[Phase::Search], 0);
  // A stopping answer is confirmed first; the all-on runs agree bit for bit: two runs of each side.
  EXPECT_EQ(model.trials, 4);
}

TEST(Bisector, NoFailureIsConfirmedByVotesWhereTheNumbersVary) {
  SimulatedModel model{rules(16), {}};
  model.numbers_vary = true;
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::NoFailure);
  EXPECT_EQ(model.trials, 10);  // five runs of all on and of all off
}

TEST(Bisector, NotAFusionProblemWhenAllOffStillFails) {
  SimulatedModel model{rules(16), {RuleSet{}}};  // the empty culprit set: fails whatever is on
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::NotFusion);
  EXPECT_NE(result.summary.find("not a fusion problem"), std::string::npos) << result.summary;
  EXPECT_EQ(result.confidence, Confidence::High);
  // confirmed before stopping: all off twice, the all-on runs having agreed bit for bit
  EXPECT_EQ(trials_of(result, model.candidates, {}, Phase::Sanity), 2);
  EXPECT_TRUE(result.culprit_sets.empty());
}

TEST(Bisector, NotAFusionProblemIsConfirmedByVotesWhereTheNumbersVary) {
  SimulatedModel model{rules(16), {RuleSet{}}};
  model.numbers_vary = true;
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::NotFusion);
  EXPECT_EQ(trials_of(result, model.candidates, {}, Phase::Sanity), 5);
}

// Rule102 on while Rule108 is off crashes the compiler; Rule111 breaks precision.
SimulatedModel crashing_model() {
  SimulatedModel model{rules(16), {{"Rule111"}}};
  model.crashes = [](const RuleSet& on) { return on.count("Rule102") && !on.count("Rule108"); };
  return model;
}

TEST(Bisector, CrashesAreNoEvidenceAndTheSearchGoesAround) {
  SimulatedModel model = crashing_model();
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule111"}})) << result.summary;
  EXPECT_TRUE(result.verified);
  int crashes = std::count_if(result.trials.begin(), result.trials.end(),
                              [](const TrialRecord& t) { return t.outcome == Outcome::Crash; });
  // The midpoint (Rule100..107 on) and its nearest neighbour crash, each retried once; the
  // search goes on from the next neighbour up.
  EXPECT_EQ(crashes, 4);
}

TEST(Bisector, CrashCountsAsFailureOnlyWhenAsked) {
  SimulatedModel model{rules(16), {}};
  model.crashes = [](const RuleSet& on) { return on.count("Rule109") > 0; };
  Result ignored = run_bisect(model);
  EXPECT_EQ(ignored.conclusion, Conclusion::BaselineUnusable);
  EXPECT_NE(ignored.summary.find("crashed"), std::string::npos) << ignored.summary;
  EXPECT_NE(ignored.summary.find("crash_is_failure"), std::string::npos) << ignored.summary;
  EXPECT_EQ(ignored.confidence, Confidence::Low);

  Options options = sequential_options();
  options.crash_is_failure = true;
  SimulatedModel again{rules(16), {}};
  again.crashes = model.crashes;
  Result counted = run_bisect(again, options);
  EXPECT_EQ(found_sets(counted), (std::set<RuleSet>{{"Rule109"}})) << counted.summary;
  EXPECT_EQ(counted.confidence, Confidence::High);
}

TEST(Bisector, AllOffCrashingStopsWithAClearConclusion) {
  SimulatedModel model{rules(8), {{"Rule103"}}};
  model.crashes = [](const RuleSet& on) { return !on.count("Rule100"); };  // Rule100 is needed to run
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::BaselineUnusable);
  EXPECT_NE(result.summary.find("needed for the model to run"), std::string::npos) << result.summary;
}

TEST(Bisector, ARuleThatDoesNotSwitchOffMakesTrialsInvalid) {
  SimulatedModel model{rules(16), {{"Rule112"}}};
  model.stuck_on = {"Rule104"};
  Result result = run_bisect(model);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule112"}})) << result.summary;
  EXPECT_EQ(result.unswitchable, (std::vector<std::string>{"Rule104"}));
  auto invalid = std::find_if(result.trials.begin(), result.trials.end(),
                              [](const TrialRecord& t) { return t.outcome == Outcome::Invalid; });
  ASSERT_NE(invalid, result.trials.end());
  EXPECT_EQ(invalid->still_fired, (std::vector<std::string>{"Rule104"}));
  EXPECT_NE(invalid->detail.find("Rule104"), std::string::npos);
  // No conclusion from it: after the invalid trial, no configuration asks for Rule104 off again.
  for (auto t = invalid + 1; t != result.trials.end(); ++t)
    EXPECT_EQ(std::count(t->off.begin(), t->off.end(), "Rule104"), 0);
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_FALSE(result.confidence_notes.empty());
}

TEST(Bisector, AnUnswitchableCulpritIsNamedAsPossibleCause) {
  SimulatedModel model{rules(8), {{"Rule104"}}};
  model.stuck_on = {"Rule104"};
  Result result = run_bisect(model);
  EXPECT_EQ(result.conclusion, Conclusion::NotFusion);
  EXPECT_NE(result.summary.find("Rule104 could not be switched off"), std::string::npos) << result.summary;
}

// A seeded 10% flaky oracle: the answer may be wrong, but then never with high confidence.
TEST(Bisector, FlakyOracleNeverWrongWithHighConfidence) {
  int right = 0, low = 0, runs = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    SimulatedModel model{rules(32), {{"Rule" + std::to_string(100 + seed % 32)}}};
    model.flake_rate = 0.1;
    model.numbers_vary = true;
    model.rng.seed(seed);
    Result result = run_bisect(model);
    bool is_right = found_sets(result) == std::set<RuleSet>{{"Rule" + std::to_string(100 + seed % 32)}};
    ++runs;
    right += is_right;
    low += result.confidence == Confidence::Low;
    if (!is_right) {
      EXPECT_EQ(result.confidence, Confidence::Low) << "seed " << seed << ": " << result.summary;
    }
    if (result.confidence == Confidence::Low) {
      EXPECT_FALSE(result.confidence_notes.empty());
    }
  }
  EXPECT_GE(right, runs * 8 / 10);
  EXPECT_GT(low, 0);  // the noise was noticed at least sometimes
}

// The second all-on run passes: the failure is nondeterministic, every verdict becomes a vote.
TEST(Bisector, DisagreeingBaselineSwitchesToVotes) {
  SimulatedModel model{rules(16), {{"Rule107"}}};
  int calls = 0;
  FunctionOracle oracle([&](const Config& off) {
    TrialOutcome outcome = model.run(off);
    if (++calls == 2) outcome.outcome = Outcome::Pass;  // the all-on repeat
    return outcome;
  });
  Result result = bisect(model.candidates, oracle, sequential_options());
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule107"}}));
  EXPECT_TRUE(result.nondeterministic);
  EXPECT_EQ(result.confidence, Confidence::Low);
  bool says_why = std::any_of(result.confidence_notes.begin(), result.confidence_notes.end(),
                              [](const std::string& n) { return n.find("nondeterministic") != std::string::npos; });
  EXPECT_TRUE(says_why);
}

// Confirmation runs of the answer disagree with the search: it is searched again with votes.
TEST(Bisector, VerificationCatchesALyingSearch) {
  SimulatedModel model{rules(16), {{"Rule107"}}};
  model.numbers_vary = true;
  int calls = 0;
  FunctionOracle oracle([&](const Config& off) {
    TrialOutcome outcome = model.run(off);
    if (++calls == 4) outcome.outcome = Outcome::Pass;  // the first prefix trial (Rule100..107 on) lies
    return outcome;
  });
  Result result = bisect(model.candidates, oracle, sequential_options());
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule107"}})) << result.summary;
  EXPECT_EQ(result.confidence, Confidence::Low);
  // The baseline's numbers differed: the lie is outvoted, not trusted as one run.
  bool voted = std::any_of(result.confidence_notes.begin(), result.confidence_notes.end(),
                           [](const std::string& n) { return n.find("majority vote") != std::string::npos; });
  EXPECT_TRUE(voted);
}

// Not monotone: Rule101 fails with Rule105, or without Rule100. The search finds the pair; the
// minimality check (Rule101 alone passes) contradicts it, with votes too.
TEST(Bisector, ContradictionsEndLowNotHigh) {
  std::vector<std::string> candidates = rules(8);
  FunctionOracle oracle([&](const Config& off) {
    auto on = [&](const char* rule) { return std::find(off.begin(), off.end(), rule) == off.end(); };
    bool fails = on("Rule101") && (on("Rule105") || !on("Rule100"));
    return TrialOutcome{fails ? Outcome::Fail : Outcome::Pass, 0, {}, {}, {}};
  });
  Result result = bisect(candidates, oracle, sequential_options());
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule101", "Rule105"}}));
  EXPECT_FALSE(result.verified);
  EXPECT_EQ(result.confidence, Confidence::Low);
  EXPECT_NE(result.summary.find("not confirmed"), std::string::npos) << result.summary;
  bool contradiction = std::any_of(
      result.confidence_notes.begin(), result.confidence_notes.end(),
      [](const std::string& n) { return n.find("contradiction even with majority votes") != std::string::npos; });
  EXPECT_TRUE(contradiction);
}

TEST(Bisector, ResumedFromItsLogRunsNothingAgain) {
  SimulatedModel model{rules(32), {{"Rule104", "Rule119"}, {"Rule127"}}};
  nlohmann::json saved;
  Options options = sequential_options();
  options.after_round = [&](const std::vector<TrialRecord>& trials) { saved = trial_log_to_json(trials); };
  Result first = run_bisect(model, options);
  ASSERT_EQ(first.conclusion, Conclusion::CulpritsFound);

  SimulatedModel fresh{model.candidates, model.culprits};
  Result resumed = run_bisect(fresh, sequential_options(), trial_log_from_json(nlohmann::json::parse(saved.dump())));
  EXPECT_EQ(fresh.trials, 0);
  EXPECT_EQ(resumed.new_trials, 0);
  EXPECT_EQ(resumed.rounds, 0);
  EXPECT_EQ(resumed.replayed_trials, first.new_trials);
  EXPECT_EQ(found_sets(resumed), found_sets(first));
  EXPECT_EQ(resumed.confidence, first.confidence);
}

TEST(Bisector, KilledMidwayResumesWhereItStopped) {
  SimulatedModel model{rules(64), {{"Rule150"}}};
  std::vector<TrialRecord> saved;
  int batches = 0;
  FunctionOracle dies_in_round_6([&](const Config& off) {
    if (++batches == 6) throw std::runtime_error("engine killed");
    return model.run(off);
  });
  Options options = sequential_options();
  options.after_round = [&](const std::vector<TrialRecord>& trials) { saved = trials; };
  EXPECT_THROW(bisect(model.candidates, dies_in_round_6, options), std::runtime_error);
  ASSERT_EQ(saved.size(), 5u);

  SimulatedModel fresh{model.candidates, model.culprits};
  Result resumed = run_bisect(fresh, sequential_options(), trial_log_from_json(trial_log_to_json(saved)));
  EXPECT_EQ(found_sets(resumed), (std::set<RuleSet>{{"Rule150"}}));
  EXPECT_EQ(resumed.replayed_trials, 5);
  EXPECT_EQ(fresh.trials, resumed.new_trials);
  EXPECT_EQ(resumed.new_trials + resumed.replayed_trials, 10);  // as if never interrupted
  EXPECT_EQ(resumed.trials.front().round, 1);
  EXPECT_EQ(resumed.trials.back().round, 10);  // round numbers continue
}

TEST(Bisector, MalformedTrialLogIsRefused) {
  EXPECT_THROW(trial_log_from_json(nlohmann::json::object()), std::runtime_error);
  EXPECT_THROW(trial_log_from_json(
                   nlohmann::json::parse(R"([{"off": [], "outcome": "melted", "round": 1, "phase": "search"}])")),
               std::runtime_error);
  EXPECT_THROW(trial_log_from_json(nlohmann::json::parse(R"([{"off": [], "outcome": "pass", "phase": "search"}])")),
               std::runtime_error);
}

TEST(Bisector, ParallelSlotsSplitKWaysInFewerRounds) {
  SimulatedModel sequential{rules(64), {{"Rule141"}}};
  Result one = run_bisect(sequential);

  SimulatedModel parallel{rules(64), {{"Rule141"}}};
  Options options = sequential_options();
  options.slots = 4;
  Result four = run_bisect(parallel, options);
  EXPECT_EQ(found_sets(four), (std::set<RuleSet>{{"Rule141"}}));
  EXPECT_EQ(four.confidence, Confidence::High);
  EXPECT_TRUE(std::all_of(parallel.batch_sizes.begin(), parallel.batch_sizes.end(), [](size_t n) { return n <= 4; }));
  EXPECT_EQ(static_cast<int>(parallel.batch_sizes.size()), four.rounds);
  EXPECT_EQ(parallel.batch_sizes.front(), 2u);  // all on and its repeat (agreeing bit for bit: all off waits)
  // 5-way splits: 64 -> 13 -> 3 -> 1 in three search rounds of four trials.
  int search_rounds = 0;
  std::set<int> rounds;
  for (const auto& t : four.trials)
    if (t.phase == Phase::Search) rounds.insert(t.round);
  search_rounds = rounds.size();
  EXPECT_EQ(search_rounds, 3);
  EXPECT_EQ(four.rounds, 5);  // + sanity and check (with a look-ahead); the checks confirm
  EXPECT_LE(four.rounds, one.rounds / 2);
}

TEST(Bisector, InteractingCulpritsWithThreeSlots) {
  SimulatedModel model{rules(50), {{"Rule102", "Rule130", "Rule149"}, {"Rule120"}}};
  Options options = sequential_options();
  options.slots = 3;
  Result result = run_bisect(model, options);
  EXPECT_EQ(found_sets(result), (std::set<RuleSet>{{"Rule102", "Rule130", "Rule149"}, {"Rule120"}}));
  EXPECT_EQ(result.confidence, Confidence::High);
  EXPECT_TRUE(std::all_of(model.batch_sizes.begin(), model.batch_sizes.end(), [](size_t n) { return n <= 3; }));
}

TEST(Bisector, TrialBudgetStopsWithLowConfidence) {
  SimulatedModel model{rules(64), {{"Rule150"}}};
  Options options = sequential_options();
  options.max_trials = 6;
  Result result = run_bisect(model, options);
  EXPECT_EQ(result.conclusion, Conclusion::Inconclusive);
  EXPECT_EQ(result.new_trials, 6);
  EXPECT_EQ(result.confidence, Confidence::Low);
  EXPECT_NE(result.summary.find("budget"), std::string::npos);
}

TEST(Bisector, RefusesDuplicateCandidates) {
  SimulatedModel model{{"A", "B", "A"}, {}};
  ModelOracle oracle(model);
  EXPECT_THROW(bisect(model.candidates, oracle, Options{}), std::invalid_argument);
}

TEST(Bisector, ResultJsonCarriesTheTrialTable) {
  SimulatedModel model{rules(8), {{"Rule105"}}};
  nlohmann::json json = run_bisect(model).to_json();
  EXPECT_EQ(json["conclusion"], "culprits_found");
  EXPECT_EQ(json["confidence"], "high");
  EXPECT_EQ(json["culprits_off"], nlohmann::json::array({"Rule105"}));
  ASSERT_FALSE(json["trials"].empty());
  const auto& first = json["trials"][0];
  EXPECT_EQ(first["outcome"], "fail");
  EXPECT_EQ(first["phase"], "sanity");
  EXPECT_EQ(first["round"], 1);
  EXPECT_EQ(first["duration_s"], 0.5);
  EXPECT_EQ(first["metrics"]["max_abs_error"], 0.5);
}

}  // namespace
