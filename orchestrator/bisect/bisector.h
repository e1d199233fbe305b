// Finds the fusion rule(s) whose being switched on makes a model fail, by running trials:
// one trial = one run of the model with a set of candidate rules switched off.
//
// The search is a pure function of the trials' outcomes, so a bisection resumed from its
// saved trial log replays every recorded trial instead of running it again.
//
// Model of the failure: it appears when every rule of some culprit set is on. There may be
// several culprit sets (independent culprits, each failing alone) and a set may have several
// members (interacting rules that only fail together). Each culprit set is found by one binary
// search per member over nested prefixes of the candidate list, which gives a 1-minimal
// failing set (the guarantee of delta debugging) in |set| * log2(N) trials, and then checked:
// the set alone on top of all-off fails, each set minus one member passes, and everything on
// but the culprits passes.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace diagnose::bisect {

enum class Outcome {
  Pass,
  Fail,  // the precision check failed
  Crash,
  Timeout,
  Invalid,  // a rule switched off still fired: the trial did not test its configuration
};
std::string outcome_name(Outcome outcome);
Outcome outcome_from_name(const std::string& name);  // throws std::invalid_argument

// The candidate rules switched off in a trial, sorted; every other rule keeps its default.
using Config = std::vector<std::string>;

// The metric of a trial judged by its exit status (trial_oracle.h): its only one.
inline constexpr const char* kExitStatusMetric = "exit_status";

struct TrialOutcome {
  Outcome outcome = Outcome::Pass;
  double duration_s = 0;
  std::map<std::string, double> metrics;
  // The rules that fired, when the trial reports them (fusion_result.json). A switched-off
  // rule among them makes the trial Invalid.
  std::optional<std::vector<std::string>> fired_rules;
  std::string detail;
};

class Oracle {
 public:
  virtual ~Oracle() = default;
  // Runs each configuration once, as independent trials that may run at the same time (one
  // call = one parallel round, never more configurations than the bisection's slots); returns
  // one outcome per configuration, in order. The same configuration may appear more than once.
  virtual std::vector<TrialOutcome> run_batch(const std::vector<Config>& configs) = 0;
};

// An oracle computed in process, one configuration after the other.
class FunctionOracle : public Oracle {
 public:
  explicit FunctionOracle(std::function<TrialOutcome(const Config&)> trial) : trial_(std::move(trial)) {}
  std::vector<TrialOutcome> run_batch(const std::vector<Config>& configs) override;

 private:
  std::function<TrialOutcome(const Config&)> trial_;
};

enum class Phase {
  Sanity,  // all on, all off, the all-on repeats
  Search,  // prefix binary (or k-way) searches
  Check,   // is the set found complete; do more culprits remain
  Verify,  // confirmations of the answer
};
std::string phase_name(Phase phase);

struct TrialRecord {
  Config off;
  Outcome outcome = Outcome::Pass;
  double duration_s = 0;
  std::map<std::string, double> metrics;
  std::vector<std::string> still_fired;  // switched-off rules that fired anyway (Invalid)
  std::string detail;
  int round = 0;  // parallel round, counted from 1 across resumed invocations
  Phase phase = Phase::Search;
  bool replayed = false;  // taken from a saved log, not run by this invocation
};

// The record of a trial of `off` that ended as `outcome` (still_fired left empty).
TrialRecord trial_record(const Config& off, const TrialOutcome& outcome, int round, Phase phase);

nlohmann::json trial_log_to_json(const std::vector<TrialRecord>& trials);
// Throws std::runtime_error naming the entry on malformed input.
std::vector<TrialRecord> trial_log_from_json(const nlohmann::json& log);

// The settings of a bisection, with the defaults of `diagnose bisect` and the fusion_bisect
// step (their help, the workflow schema and docs/workflow.md print these).
struct Options {
  int slots = 2;             // trials run at the same time
  int baseline_repeats = 1;  // extra runs of the all-on configuration, to detect nondeterminism
  // Runs of each configuration that confirms the answer, all agreeing: a wrong answer reported
  // with high confidence needs every one of them wrong (p^4 for a trial wrong with probability
  // p). Lower it only for an oracle known to be deterministic: with 2, bench/bisect_bench's
  // 10%-flaky oracle gets wrong answers reported with high confidence. When the all-on runs
  // (baseline_repeats >= 1) agree bit for bit in outcome and metrics, one run confirms each
  // configuration instead, and all off runs only when a check needs it.
  int confirmations = 4;
  // Most runs of one configuration once the oracle is known to be nondeterministic (majority
  // vote); also the runs behind a conclusion that stops the bisection at the sanity step.
  // At least `confirmations`.
  int max_votes = 5;
  bool crash_is_failure = false;  // a crash counts as a (precision) failure instead of no evidence
  int max_trials = 200;
  // Rules that run only while another is on, each with that rule, its gate (a user's own graph
  // pass and the switch that skips it too). Each such rule and its gate are the suspects: the
  // likeliest to fail together, tried alone on first; where they fail, the first culprit set is
  // searched among them alone. A configuration whose rules on all wait for a gate that is off runs
  // none of them, as all off runs none: under a deterministic oracle it passes once any trial has
  // passed, without a trial of its own.
  std::map<std::string, std::string> gates;
  // Called after every parallel round with every trial so far (to save the log for a resume).
  std::function<void(const std::vector<TrialRecord>&)> after_round;
};

enum class Conclusion {
  CulpritsFound,
  NoFailure,         // all on passes: nothing to bisect
  NotFusion,         // all off still fails: the failure does not depend on these rules
  BaselineUnusable,  // all on or all off crashed, timed out or was invalid
  Inconclusive,      // crashes, invalid trials, contradictions or the trial budget stopped the search
};
std::string conclusion_name(Conclusion conclusion);

enum class Confidence { High, Low };

struct CulpritSet {
  std::vector<std::string> rules;  // in candidate order
  // The neighbouring configurations of the search that located the last member: they differ
  // in that one rule only (replay these two to see the failure appear).
  Config last_passing, first_failing;
};

struct Result {
  Conclusion conclusion = Conclusion::Inconclusive;
  std::string summary;  // the conclusion in words
  std::vector<CulpritSet> culprit_sets;
  std::vector<std::string> unresolved;  // when the search stopped early: the rules it narrowed to
  bool verified = false;                // every confirmation ran and agreed
  Confidence confidence = Confidence::Low;
  std::vector<std::string> confidence_notes;  // why it is low, or what to know
  std::vector<std::string> unswitchable;      // rules that kept firing when switched off
  bool nondeterministic = false;              // the same configuration gave both pass and fail
  std::vector<TrialRecord> trials;            // every trial the answer rests on, replayed ones included
  int new_trials = 0, replayed_trials = 0;
  int rounds = 0;                        // parallel rounds run by this invocation
  std::map<Phase, int> trials_by_phase;  // replayed ones included

  // The configuration that turns only the culprits off (the workaround).
  Config culprits_off() const;
  nlohmann::json to_json() const;
};

// The fewest trials that can find one culprit among `candidates` rules and confirm it (it alone
// fails, everything but it passes), `all_on_runs` of the all-on configuration included, when
// the oracle is deterministic: all_on_runs + ceil(log2 N) + 2 for N >= 3. No search does better
// in its worst case: a trial that fails with one rule alone on, or passes with all but one on,
// sets that one rule apart from all others, so d trials after the all-on runs tell at most
// 2^(d-2) culprits apart with both checks among them (docs/workflow.md).
int one_culprit_floor(size_t candidates, int all_on_runs);

// `candidates`: distinct rule names, in the order the search splits them (throws
// std::invalid_argument otherwise). `previous_log`: trials of an earlier run of the same
// bisection; those it asks for again are replayed, not run.
Result bisect(const std::vector<std::string>& candidates, Oracle& oracle, const Options& options,
              const std::vector<TrialRecord>& previous_log = {});

}  // namespace diagnose::bisect
