#include "orchestrator/bisect/bisector.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>
#include <stdexcept>

namespace diagnose::bisect {
namespace {

enum class ConfigVerdict { Fails, Passes, Unusable };
enum class Signal { Fails, Passes, NoEvidence };

// Starts the search again from the sanity runs, every trial kept: some rules turned out not
// to switch off, or the oracle turned out to be nondeterministic (majority votes from then on).
struct Restart {
  std::string reason;
};
struct OutOfBudget {};

std::string key_of(const Config& config) {
  std::string key;
  for (const auto& rule : config) key += rule + '\n';
  return key;
}

std::string rule_list(const std::vector<std::string>& rules) {
  constexpr size_t kShown = 8;
  std::string text;
  for (size_t i = 0; i < rules.size() && i < kShown; ++i) text += (i ? ", " : "") + rules[i];
  if (rules.size() > kShown) text += " (+" + std::to_string(rules.size() - kShown) + " more)";
  return rules.empty() ? "(none)" : text;
}

// Metrics compared bit for bit (NaN equals NaN when its bits do).
bool same_bits(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
           return x.first == y.first && std::memcmp(&x.second, &y.second, sizeof(double)) == 0;
         });
}

std::vector<std::string> without(const std::vector<std::string>& rules, const std::vector<std::string>& removed) {
  std::set<std::string> gone(removed.begin(), removed.end());
  std::vector<std::string> kept;
  for (const auto& rule : rules)
    if (!gone.count(rule)) kept.push_back(rule);
  return kept;
}

Phase phase_from_name(const std::string& name) {
  for (Phase phase : {Phase::Sanity, Phase::Search, Phase::Check, Phase::Verify})
    if (phase_name(phase) == name) return phase;
  throw std::invalid_argument("unknown bisection phase '" + name + "'");
}

class SearchState {
 public:
  SearchState(const std::vector<std::string>& candidates, Oracle& oracle, const Options& options,
              const std::vector<TrialRecord>& previous_log)
      : candidates_(candidates), oracle_(oracle), options_(options) {
    std::set<std::string> seen;
    for (const auto& rule : candidates_) {
      if (rule.empty()) throw std::invalid_argument("bisect: empty rule name among the candidates");
      if (!seen.insert(rule).second) throw std::invalid_argument("bisect: rule '" + rule + "' listed twice");
    }
    if (options_.slots < 1) throw std::invalid_argument("bisect: slots must be at least 1");
    if (options_.confirmations < 1 || options_.max_votes < options_.confirmations)
      throw std::invalid_argument("bisect: need 1 <= confirmations <= max_votes");
    for (const auto& trial : previous_log) {
      replay_[key_of(trial.off)].push_back(trial);
      next_round_ = std::max(next_round_, trial.round + 1);
    }
  }

  Result run() {
    while (true) {
      try {
        return attempt();
      } catch (const Restart& restart) {
        note(restart.reason);
      } catch (const OutOfBudget&) {
        std::string summary = "stopped: the trial budget (" + std::to_string(options_.max_trials) + ") is spent";
        if (!found_.empty()) summary += "; culprit sets found so far are not confirmed";
        note("the trial budget ran out before the answer was confirmed");
        return make_result(Conclusion::Inconclusive, summary);
      }
    }
  }

 private:
  struct Request {
    std::vector<std::string> on;  // the candidate rules left on; the other active ones are off
    int min_observations = 1;
  };

  Config config_for(const std::vector<std::string>& on) const {
    Config off = without(active_, on);
    std::sort(off.begin(), off.end());
    return off;
  }

  std::vector<std::string> in_candidate_order(const std::vector<std::string>& rules) const {
    std::set<std::string> wanted(rules.begin(), rules.end());
    std::vector<std::string> ordered;
    for (const auto& rule : candidates_)
      if (wanted.count(rule)) ordered.push_back(rule);
    return ordered;
  }

  void note(const std::string& text) {
    if (std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(text);
  }

  Signal signal_of(const TrialRecord& trial) const {
    switch (trial.outcome) {
      case Outcome::Fail: return Signal::Fails;
      case Outcome::Pass: return Signal::Passes;
      case Outcome::Crash: return options_.crash_is_failure ? Signal::Fails : Signal::NoEvidence;
      default: return Signal::NoEvidence;
    }
  }

  struct Tally {
    int fails = 0, passes = 0, no_evidence = 0;
    bool invalid = false;
    int total() const { return fails + passes + no_evidence; }
  };

  Tally tally(const std::string& key) const {
    Tally t;
    auto it = observations_.find(key);
    if (it == observations_.end()) return t;
    for (size_t index : it->second) {
      const TrialRecord& trial = trials_[index];
      if (trial.outcome == Outcome::Invalid) t.invalid = true;
      switch (signal_of(trial)) {
        case Signal::Fails: ++t.fails; break;
        case Signal::Passes: ++t.passes; break;
        case Signal::NoEvidence: ++t.no_evidence; break;
      }
    }
    return t;
  }

  // How many more runs a configuration needs before it has a verdict.
  int runs_needed(const std::string& key, int min_observations) const {
    Tally t = tally(key);
    if (t.invalid) return 0;  // a rule that does not switch off will not switch off next time either
    int needed = std::max(0, min_observations - t.total());
    if (!voting_) {
      // One retry after a crash or timeout: it may not happen again.
      if (t.fails + t.passes == 0 && t.no_evidence < 2) needed = std::max(needed, 1);
      return needed;
    }
    if (t.total() >= options_.max_votes) return 0;
    if (t.fails + t.passes == 0 && t.no_evidence >= 2) return 0;
    int lead = std::abs(t.fails - t.passes);
    if (lead >= 2) return needed;
    return std::max(needed, std::min(2 - lead, options_.max_votes - t.total()));
  }

  ConfigVerdict verdict_of(const std::string& key) const {
    Tally t = tally(key);
    if (t.invalid) return ConfigVerdict::Unusable;
    if (voting_) {
      if (t.fails > t.passes) return ConfigVerdict::Fails;
      if (t.passes > t.fails) return ConfigVerdict::Passes;
      return ConfigVerdict::Unusable;
    }
    for (size_t index : observations_.at(key)) {
      Signal s = signal_of(trials_[index]);
      if (s != Signal::NoEvidence) return s == Signal::Fails ? ConfigVerdict::Fails : ConfigVerdict::Passes;
    }
    return ConfigVerdict::Unusable;
  }

  void record(TrialRecord trial) {
    std::string key = key_of(trial.off);
    if (trial.replayed)
      ++replayed_trials_;
    else
      ++new_trials_;
    observations_[key].push_back(trials_.size());
    trials_.push_back(std::move(trial));
  }

  TrialRecord new_record(const Config& off, const TrialOutcome& outcome, Phase phase) const {
    TrialRecord trial = trial_record(off, outcome, next_round_, phase);
    if (outcome.fired_rules) {
      std::set<std::string> fired(outcome.fired_rules->begin(), outcome.fired_rules->end());
      for (const auto& rule : off)
        if (fired.count(rule)) trial.still_fired.push_back(rule);
    }
    if (!trial.still_fired.empty()) {
      trial.outcome = Outcome::Invalid;
      std::string reported = "switched off but fired: " + rule_list(trial.still_fired) + " (the trial reported " +
                             outcome_name(outcome.outcome) + ")";
      trial.detail = trial.detail.empty() ? reported : reported + "; " + trial.detail;
    }
    return trial;
  }

  // What the latest observations of these configurations change about the search itself.
  void react_to(const std::vector<std::string>& keys) {
    std::vector<std::string> stuck;
    std::string disagreeing;
    for (const auto& key : keys) {
      for (size_t index : observations_.at(key))
        for (const auto& rule : trials_[index].still_fired)
          if (std::find(unswitchable_.begin(), unswitchable_.end(), rule) == unswitchable_.end() &&
              std::find(stuck.begin(), stuck.end(), rule) == stuck.end())
            stuck.push_back(rule);
      Tally t = tally(key);
      if (t.fails > 0 && t.passes > 0 && disagreeing.empty())
        disagreeing = "rules off: " + rule_list(trials_[observations_.at(key).front()].off);
    }
    std::string reason;
    if (!disagreeing.empty() && !nondeterministic_) {
      nondeterministic_ = true;
      note("nondeterministic: one configuration (" + disagreeing + ") both passed and failed");
    }
    if (!disagreeing.empty() && !voting_) {
      voting_ = true;
      reason = "the same configuration gave different outcomes: every verdict is a majority vote from now on";
    }
    if (!stuck.empty()) {
      unswitchable_.insert(unswitchable_.end(), stuck.begin(), stuck.end());
      std::string why = rule_list(stuck) + " kept firing when switched off (invalid trials): left on in every " +
                        "later configuration, not tested";
      note(why);
      reason = reason.empty() ? why : reason + "; " + why;
    }
    if (!reason.empty()) throw Restart{reason};
  }

  // Whether `on` holds rules and every one of them waits for a gate that is off (Options::gates):
  // the trial would run none of them, as all off runs none.
  bool runs_no_rule(const std::vector<std::string>& on) const {
    return !on.empty() && std::all_of(on.begin(), on.end(), [&](const std::string& rule) {
      auto gate = options_.gates.find(rule);
      return gate != options_.gates.end() && std::count(active_.begin(), active_.end(), gate->second) &&
             !std::count(on.begin(), on.end(), gate->second);
    });
  }

  // Whether all off passes without a trial of its own: under a deterministic oracle a failure
  // needs every rule of a culprit set on, so any trial that passed shows it.
  bool all_off_passes_by_model() const {
    return deterministic_ && std::any_of(trials_.begin(), trials_.end(),
                                         [&](const TrialRecord& trial) { return signal_of(trial) == Signal::Passes; });
  }

  // The verdict of each configuration: one that runs no rule passes when all off is known to
  // (no trial); the others run (or replay) until each has a verdict, one oracle call per round.
  std::vector<ConfigVerdict> judge(const std::vector<Request>& requests, Phase phase) {
    std::vector<Request> tried;
    std::vector<size_t> tried_index(requests.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      if (runs_no_rule(requests[i].on) && all_off_passes_by_model()) {
        note("rules on without their gate run none of them (" + rule_list(requests[i].on) +
             "): such a configuration passes as all off does, not tried");
        continue;
      }
      tried_index[i] = tried.size();
      tried.push_back(requests[i]);
    }
    std::vector<ConfigVerdict> tried_verdicts = tried.empty() ? std::vector<ConfigVerdict>() : run_trials(tried, phase);
    std::vector<ConfigVerdict> verdicts;
    for (size_t index : tried_index)
      verdicts.push_back(index == requests.size() ? ConfigVerdict::Passes : tried_verdicts[index]);
    return verdicts;
  }

  // Runs (or replays) the configurations until each has a verdict; one oracle call per round.
  std::vector<ConfigVerdict> run_trials(const std::vector<Request>& requests, Phase phase) {
    std::vector<Config> configs;
    std::vector<std::string> keys;
    for (const auto& request : requests) {
      configs.push_back(config_for(request.on));
      keys.push_back(key_of(configs.back()));
    }
    while (true) {
      std::vector<int> needed(requests.size());
      std::vector<std::string> replayed;
      for (size_t i = 0; i < requests.size(); ++i) {
        needed[i] = runs_needed(keys[i], requests[i].min_observations);
        auto queue = replay_.find(keys[i]);
        if (needed[i] > 0 && queue != replay_.end() && !queue->second.empty()) {
          TrialRecord trial = queue->second.front();
          queue->second.pop_front();
          trial.replayed = true;
          record(std::move(trial));
          replayed.push_back(keys[i]);
        }
      }
      if (!replayed.empty()) {
        react_to(replayed);
        continue;
      }
      if (std::all_of(needed.begin(), needed.end(), [](int n) { return n == 0; })) break;

      if (static_cast<int>(trials_.size()) >= options_.max_trials) throw OutOfBudget{};
      size_t room = std::min<size_t>(options_.slots, options_.max_trials - trials_.size());
      std::vector<size_t> batch;  // request indexes, round robin so that every configuration advances
      for (bool added = true; added && batch.size() < room;) {
        added = false;
        for (size_t i = 0; i < requests.size() && batch.size() < room; ++i)
          if (needed[i] > 0) {
            --needed[i];
            batch.push_back(i);
            added = true;
          }
      }
      std::vector<Config> batch_configs;
      for (size_t i : batch) batch_configs.push_back(configs[i]);
      std::vector<TrialOutcome> outcomes = oracle_.run_batch(batch_configs);
      if (outcomes.size() != batch.size())
        throw std::runtime_error("bisect: the oracle returned " + std::to_string(outcomes.size()) + " outcomes for " +
                                 std::to_string(batch.size()) + " configurations");
      std::vector<std::string> touched;
      for (size_t j = 0; j < batch.size(); ++j) {
        record(new_record(batch_configs[j], outcomes[j], phase));
        touched.push_back(keys[batch[j]]);
      }
      ++next_round_;
      ++rounds_;
      if (options_.after_round) options_.after_round(trials_);
      react_to(touched);
    }
    std::vector<ConfigVerdict> verdicts;
    for (const auto& key : keys) verdicts.push_back(verdict_of(key));
    return verdicts;
  }

  ConfigVerdict judge_one(const std::vector<std::string>& on, Phase phase, int min_observations = 1) {
    return judge({{on, min_observations}}, phase).front();
  }

  // Under a deterministic oracle an impossible pair of outcomes means the oracle is not
  // deterministic after all: search again with votes. With votes it is reported and the
  // search goes on with the outcomes that point to the smaller configurations.
  void contradiction(const std::string& what) {
    if (!voting_) {
      voting_ = true;
      throw Restart{"contradiction (" + what + "): every verdict is a majority vote from now on"};
    }
    note("contradiction even with majority votes: " + what);
  }

  // Positions strictly between lo and hi to try in one round: evenly spread, one per slot,
  // avoiding those whose trials gave no evidence.
  std::vector<size_t> split_points(size_t lo, size_t hi, const std::set<size_t>& holes) const {
    std::vector<size_t> available;
    for (size_t p = lo + 1; p < hi; ++p)
      if (!holes.count(p)) available.push_back(p);
    size_t slots = options_.slots;
    if (available.size() <= slots) return available;
    std::set<size_t> chosen;
    for (size_t i = 1; i <= slots; ++i) {
      size_t ideal = lo + (hi - lo) * i / (slots + 1);
      auto nearest = std::min_element(available.begin(), available.end(), [&](size_t a, size_t b) {
        auto distance = [&](size_t p) { return chosen.count(p) ? hi : (p > ideal ? p - ideal : ideal - p); };
        return distance(a) < distance(b);
      });
      chosen.insert(*nearest);
    }
    return {chosen.begin(), chosen.end()};
  }

  static std::vector<std::string> with_prefix(std::vector<std::string> fixed, const std::vector<std::string>& pool,
                                              size_t length) {
    fixed.insert(fixed.end(), pool.begin(), pool.begin() + length);
    return fixed;
  }

  // The smallest k such that fixed + pool[0, k) on fails, given that it fails for k = |pool|
  // and passes for k = 0. Nothing when trials without evidence leave a range undecided.
  std::optional<size_t> first_failing_prefix(const std::vector<std::string>& fixed,
                                             const std::vector<std::string>& pool) {
    size_t lo = 0, hi = pool.size();
    std::set<size_t> holes;
    while (hi - lo > 1) {
      std::vector<size_t> points = split_points(lo, hi, holes);
      if (points.empty()) {
        unresolved_ = fixed;
        unresolved_.insert(unresolved_.end(), pool.begin() + lo, pool.begin() + hi);
        note("crashed, timed-out or invalid trials left one culprit undecided among " +
             rule_list(std::vector<std::string>(pool.begin() + lo, pool.begin() + hi)));
        return std::nullopt;
      }
      std::vector<Request> requests;
      for (size_t p : points) requests.push_back({with_prefix(fixed, pool, p), 1});
      std::vector<ConfigVerdict> verdicts = judge(requests, Phase::Search);
      std::optional<size_t> first_fail;
      for (size_t i = 0; i < points.size(); ++i) {
        if (verdicts[i] == ConfigVerdict::Unusable) {
          holes.insert(points[i]);
        } else if (verdicts[i] == ConfigVerdict::Fails) {
          if (!first_fail) first_fail = points[i];
        } else if (first_fail) {
          contradiction("rules " + rule_list(with_prefix(fixed, pool, points[i])) +
                        " on passed, a subset of them failed");
        }
      }
      if (first_fail) hi = *first_fail;
      for (size_t i = 0; i < points.size(); ++i)
        if (verdicts[i] == ConfigVerdict::Passes && points[i] < hi) lo = std::max(lo, points[i]);
    }
    // Only the premise failed. If the premise was a fluke, every later search would land here
    // too and peel the pool one rule at a time: run it again first.
    if (hi == pool.size() && judge_one(with_prefix(fixed, pool, hi), Phase::Check,
                                       voting_          ? options_.max_votes
                                       : deterministic_ ? 1
                                                        : 2) != ConfigVerdict::Fails) {
      contradiction("rules " + rule_list(with_prefix(fixed, pool, hi)) + " on failed before, not when run again");
      unresolved_ = with_prefix(fixed, pool, hi);
      return std::nullopt;
    }
    return hi;
  }

  // One 1-minimal culprit set among `pool` (whose rules all on fail), one member per search;
  // `ask_ahead`: a spare slot asks whether culprits remain besides it (not among suspects, whose
  // trials ran beforehand).
  std::optional<CulpritSet> minimise(const std::vector<std::string>& remaining, bool ask_ahead) {
    std::vector<std::string> fixed, pool = remaining;
    CulpritSet set;
    while (true) {
      std::optional<size_t> boundary = first_failing_prefix(fixed, pool);
      if (!boundary) return std::nullopt;
      set.last_passing = config_for(with_prefix(fixed, pool, *boundary - 1));
      set.first_failing = config_for(with_prefix(fixed, pool, *boundary));
      fixed.push_back(pool[*boundary - 1]);
      pool.resize(*boundary - 1);
      std::vector<Request> checks{{fixed, 1}};
      // A spare slot asks ahead whether other culprits remain, in case this set is complete.
      if (ask_ahead && options_.slots > 1) checks.push_back({without(remaining, fixed), 1});
      ConfigVerdict alone = judge(checks, Phase::Check).front();
      if (alone == ConfigVerdict::Fails) {
        set.rules = in_candidate_order(fixed);
        return set;
      }
      if (alone == ConfigVerdict::Unusable) {
        unresolved_ = with_prefix(fixed, pool, pool.size());
        note("the trial of " + rule_list(fixed) + " alone crashed, timed out or was invalid");
        return std::nullopt;
      }
      if (pool.empty()) {
        contradiction("rules " + rule_list(fixed) + " on passed and failed");
        unresolved_ = fixed;
        return std::nullopt;
      }
    }
  }

  Result attempt() {
    found_.clear();
    unresolved_.clear();
    verified_ = false;
    active_ = without(candidates_, unswitchable_);
    const std::vector<std::string> all_on = active_;

    ConfigVerdict on = judge_one(all_on, Phase::Sanity, 1 + options_.baseline_repeats);
    deterministic_ = !voting_ && agrees_bitwise(config_for(all_on));
    const std::map<std::string, double>& all_on_metrics =
        trials_[observations_.at(key_of(config_for(all_on)))[0]].metrics;
    exit_status_only_ = all_on_metrics.size() == 1 && all_on_metrics.count(kExitStatusMetric);
    if (deterministic_)
      note(
          "the all-on runs agreed bit for bit: one run confirms each configuration, and all off runs only if the "
          "checks need it");
    // Under a bitwise-deterministic oracle all off passing follows from everything on but the
    // culprits passing (a failure needs every rule of a culprit set on), so it waits until a
    // check needs it.
    if (on != ConfigVerdict::Fails || !deterministic_)
      if (std::optional<Result> stop = sanity_stop()) return *stop;

    std::vector<std::string> remaining = active_;
    std::vector<std::string> pool = suspected_pool();
    while (true) {
      std::optional<CulpritSet> set = minimise(pool, pool == remaining);
      if (!set) {
        if (std::optional<Result> stop = sanity_stop()) return *stop;  // it may say why, when all off never ran
        return make_result(Conclusion::Inconclusive,
                           "stopped: the culprit could not be narrowed below " + rule_list(unresolved_));
      }
      found_.push_back(*set);
      remaining = without(remaining, set->rules);
      ConfigVerdict rest = judge_one(remaining, Phase::Check);
      if (rest == ConfigVerdict::Passes) break;
      if (rest == ConfigVerdict::Unusable) {
        note("the trial with the culprits found so far off crashed, timed out or was invalid");
        return make_result(Conclusion::Inconclusive,
                           "stopped: could not tell whether culprits remain besides those found");
      }
      // More culprits, or none of them is one: the search for the next assumes all off passes.
      if (std::optional<Result> stop = sanity_stop()) return *stop;
      if (remaining.empty()) {
        contradiction("all rules off passed and failed");
        break;
      }
      pool = remaining;
    }
    verify(remaining);
    return make_result(Conclusion::CulpritsFound, culprits_text());
  }

  // Where the first culprit set is searched: among the suspects (Options::gates) when they alone
  // on fail, else among every active rule. With slots to spare, everything but the suspects on
  // (the check that no other culprit remains) runs beside them, and then each suspect alone on,
  // side by side, but a rule that runs only with its gate (alone it runs nothing: it passes once
  // that check has): a set of two takes two rounds, where a search of every rule takes two binary
  // searches.
  std::vector<std::string> suspected_pool() {
    std::vector<std::string> suspects;
    for (const std::string& rule : active_)
      if (is_suspect(rule)) suspects.push_back(rule);
    if (suspects.empty() || suspects.size() == active_.size()) return active_;
    std::vector<Request> round{{suspects, 1}};
    if (options_.slots > 1) round.push_back({without(active_, suspects), 1});
    if (judge(round, Phase::Search).front() != ConfigVerdict::Fails) return active_;
    if (suspects.size() > 1 && suspects.size() <= static_cast<size_t>(options_.slots)) {
      std::vector<Request> alone;
      for (const std::string& rule : suspects) alone.push_back({{rule}, 1});
      judge(alone, Phase::Search);
    }
    note("the suspects " + rule_list(suspects) + " alone on fail: the first culprit set was searched among them");
    return suspects;
  }

  // A rule that runs only with its gate on, or that gate, both active.
  bool is_suspect(const std::string& rule) const {
    auto active = [&](const std::string& name) { return std::count(active_.begin(), active_.end(), name) > 0; };
    for (const auto& [gated, gate] : options_.gates)
      if ((rule == gated || rule == gate) && active(gated) && active(gate)) return true;
    return false;
  }

  // The all-on runs: more than one, the same outcome, and metrics that agree bit for bit.
  bool agrees_bitwise(const Config& all_on) const {
    const std::vector<size_t>& runs = observations_.at(key_of(all_on));
    const TrialRecord& first = trials_[runs.front()];
    return runs.size() > 1 && !first.metrics.empty() && std::all_of(runs.begin(), runs.end(), [&](size_t index) {
             return trials_[index].outcome == first.outcome && same_bits(trials_[index].metrics, first.metrics);
           });
  }

  int confirmations() const { return deterministic_ ? 1 : options_.confirmations; }

  // The sanity runs that may stop the bisection before (or instead of) a search: all on and
  // all off; nothing when neither stops it.
  std::optional<Result> sanity_stop() {
    const std::vector<std::string> all_on = active_, all_off;
    int baseline_runs = 1 + options_.baseline_repeats;
    std::vector<ConfigVerdict> sanity = judge({{all_on, baseline_runs}, {all_off, 1}}, Phase::Sanity);
    // Stopping here ends the whole diagnosis with one or two runs behind it: be sure first. Where
    // the all-on runs agreed bit for bit, a second run of each side confirms it (a disagreement
    // turns every verdict into a vote); else a vote of `max_votes` runs.
    if (sanity[0] == ConfigVerdict::Passes || sanity[1] == ConfigVerdict::Fails) {
      const int votes = deterministic_ ? 2 : options_.max_votes;
      sanity = judge({{all_on, std::max(baseline_runs, votes)}, {all_off, votes}}, Phase::Sanity);
    }
    if (sanity[0] == ConfigVerdict::Fails && sanity[1] == ConfigVerdict::Passes) return std::nullopt;
    found_.clear();  // a set found before all off ran is no culprit of a bisection that stops here
    unresolved_.clear();
    for (int i = 0; i < 2; ++i)
      if (sanity[i] == ConfigVerdict::Unusable) return baseline_unusable(i == 0 ? all_on : all_off, i == 0);
    if (sanity[0] == ConfigVerdict::Passes)
      return make_result(Conclusion::NoFailure, "no failure to bisect: the trial with every candidate rule on passes");
    std::string summary = "not a fusion problem: the failure does not depend on these rules (it remains with all " +
                          std::to_string(active_.size()) + " of them switched off)";
    if (!unswitchable_.empty())
      summary += "; " + rule_list(unswitchable_) + " could not be switched off and may cause it";
    return make_result(Conclusion::NotFusion, summary);
  }

  // Every fact the answer rests on, each confirmed by `confirmations()` agreeing runs.
  void verify(const std::vector<std::string>& rest_on) {
    struct Expectation {
      Request request;
      ConfigVerdict expected;
      std::string what;
    };
    std::vector<Expectation> expectations;
    int runs = confirmations();
    for (const auto& set : found_) {
      // Two exit statuses that agree are weaker evidence than numbers that agree bit for bit: one
      // wrong run during the search turns one culprit into a set of several, each of whose facts
      // may rest on that run. Those take `confirmations` runs; one rule failing alone, one.
      int set_runs = exit_status_only_ && set.rules.size() > 1 ? options_.confirmations : runs;
      expectations.push_back(
          {{set.rules, set_runs}, ConfigVerdict::Fails, rule_list(set.rules) + " alone (others off) fails"});
      if (set.rules.size() > 1)
        for (const auto& member : set.rules)
          expectations.push_back({{without(set.rules, {member}), set_runs},
                                  ConfigVerdict::Passes,
                                  rule_list(set.rules) + " without " + member + " passes"});
    }
    expectations.push_back({{rest_on, runs}, ConfigVerdict::Passes, "everything on but the culprits passes"});
    std::vector<Request> requests;
    for (const auto& e : expectations) requests.push_back(e.request);
    std::vector<ConfigVerdict> verdicts = judge(requests, Phase::Verify);
    verified_ = true;
    for (size_t i = 0; i < expectations.size(); ++i)
      if (verdicts[i] != expectations[i].expected) {
        verified_ = false;
        contradiction("verification: expected " + expectations[i].what + ", it " +
                      (verdicts[i] == ConfigVerdict::Fails    ? "failed"
                       : verdicts[i] == ConfigVerdict::Passes ? "passed"
                                                              : "gave no evidence"));
      }
  }

  std::string culprits_text() const {
    std::string text;
    for (const auto& set : found_) {
      if (!text.empty()) text += "; ";
      text += set.rules.size() == 1 ? set.rules.front() + " fails alone" : rule_list(set.rules) + " fail only together";
    }
    text = "culprits found (switch them off to fix): " + text;
    if (!verified_) text += " (not confirmed)";
    return text;
  }

  Result baseline_unusable(const std::vector<std::string>& on, bool all_on) {
    const auto& trials = observations_.at(key_of(config_for(on)));
    Outcome outcome = trials_[trials.back()].outcome;
    std::string what = outcome == Outcome::Invalid   ? "was invalid"
                       : outcome == Outcome::Timeout ? "timed out"
                                                     : "crashed";
    const std::string& detail = trials_[trials.back()].detail;
    if (!detail.empty()) what += " (" + detail + ")";
    std::string summary = all_on ? "the trial with every candidate rule on " + what + ": precision cannot be judged" +
                                       (outcome == Outcome::Crash ? " (set crash_is_failure to bisect the crash)" : "")
                                 : "the trial with every candidate rule off " + what +
                                       ": some of these rules are needed for the model to run; exclude them";
    return make_result(Conclusion::BaselineUnusable, summary);
  }

  Result make_result(Conclusion conclusion, const std::string& summary) {
    Result result;
    result.conclusion = conclusion;
    result.summary = summary;
    result.culprit_sets = found_;
    result.unresolved = in_candidate_order(unresolved_);
    result.verified = conclusion == Conclusion::CulpritsFound && verified_;
    result.unswitchable = unswitchable_;
    result.nondeterministic = nondeterministic_;
    result.confidence_notes = notes_;
    bool settled = result.verified || conclusion == Conclusion::NoFailure || conclusion == Conclusion::NotFusion;
    bool clean = !voting_ && !nondeterministic_;
    result.confidence = settled && clean ? Confidence::High : Confidence::Low;
    if (voting_) result.confidence_notes.push_back("verdicts are majority votes over repeated trials");
    result.trials = trials_;
    result.new_trials = new_trials_;
    result.replayed_trials = replayed_trials_;
    result.rounds = rounds_;
    for (const auto& trial : trials_) ++result.trials_by_phase[trial.phase];
    return result;
  }

  const std::vector<std::string> candidates_;
  Oracle& oracle_;
  const Options options_;

  std::vector<std::string> unswitchable_;  // in the order they were found
  std::vector<std::string> active_;        // candidates that can be switched off, in candidate order
  std::vector<TrialRecord> trials_;
  std::map<std::string, std::vector<size_t>> observations_;  // configuration key -> trials_ indexes
  std::map<std::string, std::deque<TrialRecord>> replay_;    // saved trials not used yet
  int next_round_ = 1;
  int rounds_ = 0, new_trials_ = 0, replayed_trials_ = 0;
  bool voting_ = false;            // verdicts are majority votes
  bool nondeterministic_ = false;  // some configuration both passed and failed
  bool deterministic_ = false;     // the all-on runs agreed bit for bit (this attempt)
  bool exit_status_only_ = false;  // and their one metric was the exit status
  std::vector<std::string> notes_;

  // State of the current attempt.
  std::vector<CulpritSet> found_;
  std::vector<std::string> unresolved_;
  bool verified_ = false;
};

}  // namespace

std::string outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "fail";
    case Outcome::Crash: return "crash";
    case Outcome::Timeout: return "timeout";
    case Outcome::Invalid: return "invalid";
  }
  return "?";
}

Outcome outcome_from_name(const std::string& name) {
  for (Outcome o : {Outcome::Pass, Outcome::Fail, Outcome::Crash, Outcome::Timeout, Outcome::Invalid})
    if (outcome_name(o) == name) return o;
  throw std::invalid_argument("unknown trial outcome '" + name + "'");
}

std::string phase_name(Phase phase) {
  switch (phase) {
    case Phase::Sanity: return "sanity";
    case Phase::Search: return "search";
    case Phase::Check: return "check";
    case Phase::Verify: return "verify";
  }
  return "?";
}

std::string conclusion_name(Conclusion conclusion) {
  switch (conclusion) {
    case Conclusion::CulpritsFound: return "culprits_found";
    case Conclusion::NoFailure: return "no_failure";
    case Conclusion::NotFusion: return "not_fusion";
    case Conclusion::BaselineUnusable: return "baseline_unusable";
    case Conclusion::Inconclusive: return "inconclusive";
  }
  return "?";
}

std::vector<TrialOutcome> FunctionOracle::run_batch(const std::vector<Config>& configs) {
  std::vector<TrialOutcome> outcomes;
  for (const auto& config : configs) outcomes.push_back(trial_(config));
  return outcomes;
}

TrialRecord trial_record(const Config& off, const TrialOutcome& outcome, int round, Phase phase) {
  TrialRecord trial;
  trial.off = off;
  trial.outcome = outcome.outcome;
  trial.duration_s = outcome.duration_s;
  trial.metrics = outcome.metrics;
  trial.detail = outcome.detail;
  trial.round = round;
  trial.phase = phase;
  return trial;
}

nlohmann::json trial_log_to_json(const std::vector<TrialRecord>& trials) {
  nlohmann::json log = nlohmann::json::array();
  for (const auto& t : trials)
    log.push_back({{"off", t.off},
                   {"outcome", outcome_name(t.outcome)},
                   {"duration_s", t.duration_s},
                   {"metrics", t.metrics},
                   {"still_fired", t.still_fired},
                   {"detail", t.detail},
                   {"round", t.round},
                   {"phase", phase_name(t.phase)},
                   {"replayed", t.replayed}});
  return log;
}

std::vector<TrialRecord> trial_log_from_json(const nlohmann::json& log) {
  if (!log.is_array()) throw std::runtime_error("trial log: expected a JSON array of trials");
  std::vector<TrialRecord> trials;
  for (size_t i = 0; i < log.size(); ++i) {
    const auto& entry = log[i];
    try {
      TrialRecord t;
      t.off = entry.at("off").get<Config>();
      std::sort(t.off.begin(), t.off.end());
      t.outcome = outcome_from_name(entry.at("outcome").get<std::string>());
      t.duration_s = entry.value("duration_s", 0.0);
      t.metrics = entry.value("metrics", std::map<std::string, double>{});
      t.still_fired = entry.value("still_fired", std::vector<std::string>{});
      t.detail = entry.value("detail", std::string{});
      t.round = entry.at("round").get<int>();
      t.phase = phase_from_name(entry.at("phase").get<std::string>());
      t.replayed = entry.value("replayed", false);
      trials.push_back(std::move(t));
    } catch (const std::exception& e) {
      throw std::runtime_error("trial log: entry " + std::to_string(i) + ": " + e.what());
    }
  }
  return trials;
}

Config Result::culprits_off() const {
  Config off;
  for (const auto& set : culprit_sets) off.insert(off.end(), set.rules.begin(), set.rules.end());
  std::sort(off.begin(), off.end());
  return off;
}

nlohmann::json Result::to_json() const {
  nlohmann::json sets = nlohmann::json::array();
  for (const auto& set : culprit_sets)
    sets.push_back({{"rules", set.rules}, {"last_passing", set.last_passing}, {"first_failing", set.first_failing}});
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [phase, count] : trials_by_phase) phases[phase_name(phase)] = count;
  return {{"conclusion", conclusion_name(conclusion)},
          {"summary", summary},
          {"culprit_sets", sets},
          {"culprits_off", culprits_off()},
          {"unresolved", unresolved},
          {"verified", verified},
          {"confidence", confidence == Confidence::High ? "high" : "low"},
          {"confidence_notes", confidence_notes},
          {"unswitchable", unswitchable},
          {"nondeterministic", nondeterministic},
          {"new_trials", new_trials},
          {"replayed_trials", replayed_trials},
          {"rounds", rounds},
          {"trials_by_phase", phases},
          {"trials", trial_log_to_json(trials)}};
}

int one_culprit_floor(size_t candidates, int all_on_runs) {
  // One rule: all off is the other check. Two: each rule alone is all but the other.
  if (candidates <= 2) return all_on_runs + static_cast<int>(candidates);
  int log2_ceil = 0;
  while ((size_t{1} << log2_ceil) < candidates) ++log2_ceil;
  return all_on_runs + log2_ceil + 2;
}

Result bisect(const std::vector<std::string>& candidates, Oracle& oracle, const Options& options,
              const std::vector<TrialRecord>& previous_log) {
  return SearchState(candidates, oracle, options, previous_log).run();
}

}  // namespace diagnose::bisect
