#include "orchestrator/bisect/driver.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"

namespace diagnose::bisect {

namespace fs = boost::filesystem;

std::string trial_log_path(const std::string& dir) { return dir + "/trial_log.json"; }

std::optional<TrialLog> read_trial_log(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  try {
    std::ifstream in(path);
    nlohmann::json doc = nlohmann::json::parse(in);
    TrialLog log;
    log.trials = trial_log_from_json(doc.at("trials"));
    if (doc.contains("bisection")) {  // diagnose bisect's older form: no fields of the knob
      log.fingerprint = doc["bisection"];
      log.candidates = log.fingerprint.at("candidates").get<std::vector<std::string>>();
      log.fingerprint.erase("candidates");
      return log;
    }
    log.fingerprint = doc.at("fingerprint");
    log.candidates = doc.at("candidates").get<std::vector<std::string>>();
    log.knob_state = doc;
    for (const char* key : {"fingerprint", "candidates", "trials"}) log.knob_state.erase(key);
    return log;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not a trial log: " + e.what());
  }
}

void write_trial_log(const std::string& path, const TrialLog& log) {
  nlohmann::json doc = log.knob_state.is_object() ? log.knob_state : nlohmann::json::object();
  doc["fingerprint"] = log.fingerprint;
  doc["candidates"] = log.candidates;
  doc["trials"] = trial_log_to_json(log.trials);
  write_file_atomically(path, doc.dump(1) + "\n");
}

BisectionOutcome Bisection::run(const BisectionPlan& plan, const nlohmann::json& extra_json) {
  BisectionOutcome outcome;
  auto stop = [&](BisectionOutcome::Status status, std::string message = "") {
    outcome.status = status;
    outcome.message = std::move(message);
    return outcome;
  };
  fs::create_directories(plan.dir);
  TrialLog log;
  if (plan.resume) {
    log = *plan.resume;
    std::string all_on_dir = setup_.dir_of(trial_name({}, 0));
    setup_.knob->resume(log.knob_state, log.candidates, absolute_path(setup_.knob->fired_report(), all_on_dir));
  } else {
    log.candidates = plan.candidates;
  }
  log.knob_state = setup_.knob->state();
  log.fingerprint = plan.fingerprint;  // a resumed log keeps its trials under today's inputs

  // The first round: the runs alongside, and the all-on run when the candidates are to be listed.
  bool to_list = !plan.resume && log.candidates.empty();
  oracle_.emplace(setup_, log.trials);
  std::vector<RunRequest> first_round = plan.alongside;
  std::optional<Trial> all_on;
  if (to_list) {
    all_on = oracle_->prepare({}, 0);
    first_round.push_back(setup_.make_request(*all_on));
  }
  std::vector<RunRecord> records = first_round.empty() ? std::vector<RunRecord>{} : setup_.execute(first_round);
  outcome.alongside.assign(records.begin(), records.begin() + plan.alongside.size());
  if (plan.check_alongside) {
    std::string problem = plan.check_alongside(outcome.alongside);
    if (!problem.empty()) return stop(BisectionOutcome::Status::Failed, problem);
  }
  if (to_list) {
    const RunRequest& request = first_round.back();
    TrialOutcome listing = oracle_->judge(*all_on, request, records.back());
    outcome.listed = true;
    outcome.listing_run = request.name;
    outcome.listing_dir = request.dir;
    outcome.listing_outcome = outcome_name(listing.outcome) + (listing.detail.empty() ? "" : ": " + listing.detail);
    outcome.listing_had_no_report = !listing.fired_rules;
    if (!listing.fired_rules || listing.fired_rules->empty())
      outcome.listing_report =
          (listing.fired_rules ? "an empty report at " : "no fired-rule report at ") + setup_.knob->fired_report();
    bool ran_to_the_end = listing.outcome == Outcome::Pass || listing.outcome == Outcome::Fail;
    if (ran_to_the_end && !outcome.listing_report.empty()) return stop(BisectionOutcome::Status::NoRuleFired);
    if (!listing.fired_rules)
      return stop(BisectionOutcome::Status::Failed, "cannot list the candidates: the all-on run (" + request.name +
                                                        ", " + outcome.listing_outcome + ") left " +
                                                        outcome.listing_report);
    log.candidates = *listing.fired_rules;
    setup_.knob->learn(absolute_path(setup_.knob->fired_report(), request.dir), true);
    log.knob_state = setup_.knob->state();
    log.trials.push_back(candidate_listing_record(listing));
  }
  if (!plan.resume) log.candidates = select_rules(log.candidates, plan.include, plan.exclude);
  if (log.candidates.empty()) return stop(BisectionOutcome::Status::NoCandidates);

  log_path_ = trial_log_path(plan.dir);
  write_trial_log(log_path_, log);
  if (plan.on_candidates) plan.on_candidates(log.candidates);
  Options options = plan.options;
  options.gates = setup_.knob->gates(log.candidates);
  options.max_votes = std::max(options.max_votes, options.confirmations);
  const size_t horizon =
      static_cast<size_t>(one_culprit_floor(log.candidates.size(), 1 + std::max(0, options.baseline_repeats)));
  options.after_round = [&](const std::vector<TrialRecord>& trials) {
    log.trials = trials;
    write_trial_log(log_path_, log);
    if (plan.on_trials) plan.on_trials(trials.size(), std::max(horizon, trials.size() + 1));
  };
  oracle_.emplace(setup_, log.trials);
  outcome.result = bisect(log.candidates, *oracle_, options, log.trials);
  if (plan.on_trials) plan.on_trials(outcome.result.trials.size(), outcome.result.trials.size());
  outcome.status = BisectionOutcome::Status::Bisected;

  nlohmann::json doc = outcome.result.to_json();
  doc["candidates"] = log.candidates;
  doc["trial_table"] = trial_table(outcome.result);
  doc.update(extra_json);
  outcome.json_path = plan.dir + "/bisection.json";
  write_file_atomically(outcome.json_path, doc.dump(1) + "\n");
  if (outcome.result.conclusion == Conclusion::CulpritsFound)
    outcome.workaround_path = setup_.knob->write_workaround(outcome.result.culprits_off(), plan.dir);
  return outcome;
}

RunRequest Bisection::replay(const Config& off) const {
  TrialOracle oracle = oracle_ ? *oracle_ : TrialOracle(setup_, {});
  return setup_.make_request(oracle.prepare(off, 0));
}

}  // namespace diagnose::bisect
