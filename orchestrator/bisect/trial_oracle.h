// The bisection oracle over real processes: one trial = one fresh run of the model in its
// own directory (GE's options are fixed per process) with a switch configuration, judged by
// its exit status or by the comparison core against a golden dump. Used by the
// fusion_bisect step and by `diagnose bisect`.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "compare/judge.h"
#include "orchestrator/bisect/bisector.h"
#include "orchestrator/bisect/knob.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"

namespace diagnose::bisect {

enum class JudgeKind {
  ExitCode,  // 0 passes, another status fails; a signal or timeout is a crash or timeout
  Compare,   // the trial's dump against the golden dump; a non-zero exit is a crash
};

struct TrialJudge {
  JudgeKind kind = JudgeKind::ExitCode;
  // Compare: the golden dump (directory or file); relative: to the trial's directory (a
  // reference each trial computes itself, as single-op's eager side).
  std::string golden;
  // Compare: the trial's dump, relative to its run's directory (a shared run's: that run's) or absolute.
  std::string dump = "dump";
  // Compare: judge only the rows whose op_key matches one of these regexes (empty: every row).
  std::vector<std::string> ops;
  compare::Tolerances tolerances = compare::Tolerances::defaults();
};

// One trial about to run.
struct Trial {
  std::string name;         // stable across resumes: trial_name(off, occurrence)
  std::string dir;          // its own directory (created)
  std::string switch_file;  // the switch file turning `off` off, in dir (when the knob writes one)
  Config off;
  int occurrence = 0;  // earlier trials of `off` in this bisection: a repeat when > 0
};

struct TrialSetup {
  std::function<std::string(const std::string& name)> dir_of;
  std::function<RunRequest(const Trial&)> make_request;
  // Runs one parallel round (StepContext::run, or the scheduler for `diagnose bisect`).
  std::function<std::vector<RunRecord>(const std::vector<RunRequest>&)> execute;
  TrialJudge judge;
  // The trials' switch files, their fired-rule reports and the workaround (knob.h); shared by
  // the driver and its oracles, which teach it what the reports say.
  std::shared_ptr<Knob> knob = std::make_shared<Knob>();
};

// Arguments that name an existing file or directory relative to `cwd` made absolute, so that
// they keep naming it when the trial runs in its own directory.
void anchor_relative_paths(RunRequest& request, const std::string& cwd);

// "t" + 8 hex digits of the configuration + "-" + occurrence: the k-th trial of a configuration.
std::string trial_name(const Config& off, int occurrence);

// `rules` that match an include glob (all when none) and no exclude glob, in order.
std::vector<std::string> select_rules(const std::vector<std::string>& rules, const std::vector<std::string>& include,
                                      const std::vector<std::string>& exclude);

// The trial table of a bisection: one row per trial, the trial's name included; `off_column`
// names what the trial switched off (rules; a node search's nodes run eagerly).
nlohmann::json trial_table(const Result& result, const std::string& off_column = "rules_off");

// The record of the all-on run that listed the candidates: the first sanity trial.
TrialRecord candidate_listing_record(const TrialOutcome& outcome);

class TrialOracle : public Oracle {
 public:
  // `previous_log`: the trials an earlier invocation recorded, so that names continue.
  TrialOracle(TrialSetup setup, const std::vector<TrialRecord>& previous_log);
  std::vector<TrialOutcome> run_batch(const std::vector<Config>& configs) override;

  // The trial that runs `off` for the k-th time: directory and switch file ready.
  Trial prepare(const Config& off, int occurrence) const;
  // The outcome of a finished run of `trial`; the knob learns from its report. `compared`, where
  // given, receives the comparison a compare judge made of it (left empty where none was made).
  TrialOutcome judge(const Trial& trial, const RunRequest& request, const RunRecord& record,
                     compare::CompareResult* compared = nullptr) const;

 private:
  TrialSetup setup_;
  std::map<Config, int> runs_;  // trials started per configuration, earlier invocations included
};

}  // namespace diagnose::bisect
