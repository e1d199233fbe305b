// One bisection from start to finish, the same for `diagnose bisect`, the fusion_bisect step
// and any later search over rules: the candidates (given, or the rules the all-on run
// reports), the selection by include/exclude globs, the trial log (one format, tied to the
// bisection's fingerprint so that a log of another bisection is never replayed), the search
// (bisector.h) over real trials (trial_oracle.h), and the files it leaves: bisection.json and,
// when culprits are found, the knob's workaround.
//
// trial_log.json: {"fingerprint": <the caller's identity of the bisection>, "candidates": [...],
//                  "trials": [...], and the knob's own fields (knob.h)}; `diagnose bisect`'s
// older {"bisection", "trials"} logs are read too (with no fields of the knob).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/bisect/bisector.h"
#include "orchestrator/bisect/trial_oracle.h"

namespace diagnose::bisect {

// A trial log as saved.
struct TrialLog {
  nlohmann::json fingerprint;
  std::vector<std::string> candidates;
  nlohmann::json knob_state;  // the knob's fields (Knob::state), null in the older form
  std::vector<TrialRecord> trials;
};

// <dir>/trial_log.json, where a bisection keeps its log.
std::string trial_log_path(const std::string& dir);
// The log at `path`; nullopt when there is none. Throws std::runtime_error naming the file
// when it cannot be read.
std::optional<TrialLog> read_trial_log(const std::string& path);
void write_trial_log(const std::string& path, const TrialLog& log);

struct BisectionPlan {
  std::string dir;  // bisection.json, trial_log.json and the knob's workaround go here
  nlohmann::json fingerprint;
  // Trials to replay: a log of this same bisection (its candidates and knob state are used).
  std::optional<TrialLog> resume;
  std::vector<std::string> candidates;  // empty: the rules the all-on run reports
  std::vector<std::string> include, exclude;
  Options options;  // after_round is set by the driver
  // Runs started in the same round as the all-on run that lists the candidates, or alone when
  // nothing is to be listed (a golden run); `check_alongside` sees their records first and
  // returns why the bisection cannot go on ("" to go on).
  std::vector<RunRequest> alongside;
  std::function<std::string(const std::vector<RunRecord>&)> check_alongside;
  // Told the candidates once they are known, before the search starts.
  std::function<void(const std::vector<std::string>&)> on_candidates;
  // Told after each round the trials done and about how many there will be: the fewest that can
  // find one culprit among the candidates (one_culprit_floor), or one more than done past it; at
  // the end, done and done.
  std::function<void(size_t done, size_t about)> on_trials;
};

struct BisectionOutcome {
  enum class Status {
    Bisected,      // the search ran: `result`
    NoRuleFired,   // the all-on run ran to the end and its report lists no rule (or there is none)
    NoCandidates,  // none given, listed, or left by include/exclude
    Failed,        // the candidates could not be listed, or a run alongside failed: `message`
  };
  Status status = Status::Failed;
  std::string message;               // Failed: why
  std::vector<RunRecord> alongside;  // the records of the plan's runs alongside, once they ran
  // When the all-on run listed the candidates: its name, its outcome ("pass", "crash: ..."),
  // and what it left ("no fired-rule report at X", "an empty report at X"; empty when it listed).
  bool listed = false;
  bool listing_had_no_report = false;  // the all-on run left no fired-rule report at all
  std::string listing_run, listing_dir, listing_outcome, listing_report;  // listing_dir: where it ran
  Result result;
  std::string json_path;        // bisection.json (Bisected)
  std::string workaround_path;  // the knob's culprits-off workaround (CulpritsFound, when the knob writes one)
};

class Bisection {
 public:
  explicit Bisection(TrialSetup setup) : setup_(std::move(setup)) {}
  // Runs the plan; RunsInterrupted passes through (the trial log is saved after every round).
  // `extra_json` joins bisection.json.
  BisectionOutcome run(const BisectionPlan& plan, const nlohmann::json& extra_json = nlohmann::json::object());
  // The request that runs `off` once more (the reproduce lines: last passing, first failing,
  // the workaround).
  RunRequest replay(const Config& off) const;
  const std::string& log_path() const { return log_path_; }

 private:
  TrialSetup setup_;
  std::string log_path_;
  std::optional<TrialOracle> oracle_;
};

}  // namespace diagnose::bisect
