#include "orchestrator/bisect/trial_oracle.h"

#include <fnmatch.h>

#include <boost/filesystem.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "orchestrator/engine/digest.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/util/log_tail.h"

namespace diagnose::bisect {

namespace fs = boost::filesystem;

std::string trial_name(const Config& off, int occurrence) {
  uint64_t hash = kFnv1aOffset;
  for (const std::string& rule : off) hash = fnv1a(rule + '\n', hash);
  char text[32];
  std::snprintf(text, sizeof text, "t%08llx-%d", static_cast<unsigned long long>(hash & 0xffffffffull), occurrence);
  return text;
}

void anchor_relative_paths(RunRequest& request, const std::string& cwd) {
  for (std::string& arg : request.argv) {
    if (arg.empty() || arg[0] == '-' || fs::path(arg).is_absolute()) continue;
    boost::system::error_code error;
    if (fs::exists(fs::path(cwd) / arg, error)) arg = absolute_path(arg, cwd);
  }
}

std::vector<std::string> select_rules(const std::vector<std::string>& rules, const std::vector<std::string>& include,
                                      const std::vector<std::string>& exclude) {
  auto matches = [](const std::vector<std::string>& globs, const std::string& rule) {
    for (const std::string& glob : globs)
      if (::fnmatch(glob.c_str(), rule.c_str(), 0) == 0) return true;
    return false;
  };
  std::vector<std::string> selected;
  for (const std::string& rule : rules)
    if ((include.empty() || matches(include, rule)) && !matches(exclude, rule)) selected.push_back(rule);
  return selected;
}

TrialRecord candidate_listing_record(const TrialOutcome& outcome) {
  TrialRecord record = trial_record({}, outcome, 1, Phase::Sanity);
  record.detail = "the run that listed the candidates" + (outcome.detail.empty() ? "" : "; " + outcome.detail);
  return record;
}

nlohmann::json trial_table(const Result& result, const std::string& off_column) {
  nlohmann::json table = nlohmann::json::array();
  std::map<Config, int> seen;
  for (const TrialRecord& trial : result.trials) {
    std::string off;
    for (const std::string& rule : trial.off) off += (off.empty() ? "" : " ") + rule;
    nlohmann::json row = {{"trial", trial_name(trial.off, seen[trial.off]++)},
                          {off_column, off.empty() ? "(none: all on)" : off},
                          {"outcome", outcome_name(trial.outcome)},
                          {"duration_s", std::round(trial.duration_s * 100) / 100},
                          {"round", trial.round},
                          {"phase", phase_name(trial.phase)}};
    for (const auto& [name, value] : trial.metrics) row[name] = value;
    if (!trial.detail.empty()) row["detail"] = trial.detail;
    table.push_back(row);
  }
  return table;
}

TrialOracle::TrialOracle(TrialSetup setup, const std::vector<TrialRecord>& previous_log) : setup_(std::move(setup)) {
  for (const TrialRecord& trial : previous_log) ++runs_[trial.off];
}

Trial TrialOracle::prepare(const Config& off, int occurrence) const {
  Trial trial;
  trial.off = off;
  trial.name = trial_name(off, occurrence);
  trial.occurrence = occurrence;
  trial.dir = setup_.dir_of(trial.name);
  fs::create_directories(trial.dir);
  setup_.knob->prepare(trial);
  return trial;
}

namespace {

std::string last_lines(const std::string& path, int lines) {
  std::string tail = log_tail(path, lines, 2048);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

std::string absolute_in(const std::string& path, const std::string& base) {
  return fs::path(path).is_absolute() ? path : (fs::path(base) / path).lexically_normal().string();
}

void judge_by_comparison(const TrialJudge& judge, const std::string& golden, const std::string& dump,
                         compare::CompareResult& compared, TrialOutcome& outcome) {
  compare::CompareOptions options;
  options.golden_path = golden;
  options.my_path = dump;
  options.tolerances = judge.tolerances;
  options.threads = 1;  // trials already run side by side
  compared = compare::run_compare(options);
  if (!compared.fatal_error.empty()) {
    outcome.outcome = Outcome::Crash;
    outcome.detail = "cannot compare with the golden dump: " + compared.fatal_error;
    return;
  }
  std::vector<std::regex> ops;
  for (const std::string& op : judge.ops) ops.emplace_back(op);
  auto judged = [&](const compare::Row& row) {
    if (ops.empty()) return true;
    for (const std::regex& op : ops)
      if (std::regex_search(row.spec.op_key, op)) return true;
    return false;
  };
  size_t rows_compared = 0, rows_failed = 0;
  std::string first_failing;
  double max_abs = 0, min_cosine = 1;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) {
      if ((row.verdict != compare::Verdict::Pass && row.verdict != compare::Verdict::Fail) || !judged(row)) continue;
      ++rows_compared;
      if (row.verdict == compare::Verdict::Fail && rows_failed++ == 0) first_failing = row.spec.op_key;
      if (!row.metrics) continue;
      if (std::isfinite(row.metrics->max_absolute_error)) max_abs = std::max(max_abs, row.metrics->max_absolute_error);
      if (std::isfinite(row.metrics->cosine_similarity))
        min_cosine = std::min(min_cosine, row.metrics->cosine_similarity);
    }
  if (rows_compared == 0) {
    outcome.outcome = Outcome::Crash;
    outcome.detail = "cannot compare with the golden dump: no comparable rows";
    if (!ops.empty())
      outcome.detail +=
          " of the ops judge_ops names (the golden and the trial's dump may name them differently: "
          "an eager aten-level dump and a compiled one do)";
    return;
  }
  outcome.metrics = {{"max_abs_error", max_abs},
                     {"min_cosine", min_cosine},
                     {"rows_compared", static_cast<double>(rows_compared)},
                     {"rows_failed", static_cast<double>(rows_failed)}};
  outcome.outcome = rows_failed > 0 ? Outcome::Fail : Outcome::Pass;
  if (rows_failed > 0)
    outcome.detail = std::to_string(rows_failed) + " of " + std::to_string(rows_compared) +
                     " rows out of tolerance, first at " + first_failing;
}

}  // namespace

TrialOutcome TrialOracle::judge(const Trial& trial, const RunRequest& request, const RunRecord& record,
                                compare::CompareResult* compared) const {
  TrialOutcome outcome;
  compare::CompareResult unkept;
  outcome.duration_s = record.finished > record.started ? record.finished - record.started : 0;
  std::string why = record.error.empty() ? run_status_name(record.status) : record.error;
  std::string tail = last_lines(record.stderr_path, 3);
  switch (record.status) {
    case RunStatus::Succeeded:
      if (setup_.judge.kind == JudgeKind::ExitCode)
        outcome.outcome = Outcome::Pass;
      else
        judge_by_comparison(setup_.judge, absolute_in(setup_.judge.golden, trial.dir),
                            absolute_in(setup_.judge.dump, request.dir), compared ? *compared : unkept, outcome);
      break;
    case RunStatus::Failed:
      outcome.outcome = setup_.judge.kind == JudgeKind::ExitCode ? Outcome::Fail : Outcome::Crash;
      outcome.detail = why;
      break;
    case RunStatus::TimedOut:
      outcome.outcome = Outcome::Timeout;
      outcome.detail = why;
      break;
    case RunStatus::Interrupted:
    case RunStatus::Pending:
    case RunStatus::Running: throw RunsInterrupted();
    default:  // crashed, could not start, outputs missing
      outcome.outcome = Outcome::Crash;
      outcome.detail = why;
      break;
  }
  // An exit-code oracle's number: the all-on runs that agree on it show the command deterministic
  // (bisector.h, Options::confirmations), as a compare oracle's agreeing metrics do.
  if (setup_.judge.kind == JudgeKind::ExitCode && record.exit_code &&
      (record.status == RunStatus::Succeeded || record.status == RunStatus::Failed))
    outcome.metrics[kExitStatusMetric] = *record.exit_code;
  if (!tail.empty() && outcome.outcome != Outcome::Pass)
    outcome.detail += (outcome.detail.empty() ? "" : "; ") + std::string("stderr: ") + tail;
  if (!setup_.knob->fired_report().empty()) {
    std::string report = absolute_in(setup_.knob->fired_report(), request.dir);
    boost::system::error_code error;
    std::time_t written = fs::last_write_time(report, error);
    // A report older than the run was left by an earlier attempt in the same directory.
    bool stale = !error && static_cast<double>(written) < std::floor(record.started) - 1;
    try {
      if (!stale) {
        outcome.fired_rules = setup_.knob->fired_rules(report);
        setup_.knob->learn(report, false);
      }
    } catch (const std::exception& e) {
      outcome.detail += (outcome.detail.empty() ? "" : "; ") + std::string("fired-rule report unreadable: ") + e.what();
    }
  }
  return outcome;
}

std::vector<TrialOutcome> TrialOracle::run_batch(const std::vector<Config>& configs) {
  std::vector<Trial> trials;
  std::vector<RunRequest> requests;
  for (const Config& off : configs) {
    trials.push_back(prepare(off, runs_[off]++));
    requests.push_back(setup_.make_request(trials.back()));
    if (trials.back().occurrence > 0) requests.back().never_forked = kRepeatNeverForked;
  }
  std::vector<RunRecord> records = setup_.execute(requests);
  std::vector<TrialOutcome> outcomes;
  for (size_t i = 0; i < trials.size(); ++i) outcomes.push_back(judge(trials[i], requests[i], records.at(i)));
  return outcomes;
}

}  // namespace diagnose::bisect
