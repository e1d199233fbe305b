// What the engine tells the terminal while it runs: the current step, runs done of
// total, elapsed time and an estimate for long steps. Human lines on stderr, or one
// JSON object per line (--log-format json) for machines.
#pragma once

#include <condition_variable>
#include <iosfwd>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"

namespace diagnose {

// "4.2s", "3m07s".
std::string seconds_text(double s);
// A search's trials: "trial 5 of about 7", "9 trials in all" once done reaches the horizon.
std::string trial_text(size_t done, size_t about);

// What is known of a step's runs when its progress line is written.
struct RunsSoFar {
  std::vector<double> finished_seconds;  // the durations of the runs done
  std::vector<double> running_seconds;   // how long each running run has been running
  size_t queued = 0;                     // scheduled, not started
};

struct TimeLeft {
  double seconds = 0;
  double mean_run_seconds = 0;  // of the finished runs
  bool overdue = false;         // a running run has taken longer than that mean
};

// Each run still to start takes the finished runs' mean and each running one the rest of it,
// as many at a time as are running now: the estimate counts down between runs and moves when
// one finishes. An overdue run counts as about to finish. nullopt before any run finished or
// when none is left.
std::optional<TimeLeft> estimate_time_left(const RunsSoFar& runs);

enum class Verbosity { Quiet, Normal, Verbose };
enum class LogFormat { Human, Json };

class Progress {
 public:
  Progress(std::ostream& out, Verbosity verbosity, LogFormat format, double heartbeat_s = 10);
  ~Progress();

  void workflow_started(const std::string& name, const std::string& run_dir, bool resumed, size_t steps);
  void step_started(const std::string& id, size_t index, size_t total);
  void runs_scheduled(const std::string& step, size_t runs);
  void step_kept(const StepResult& result);  // done in an earlier invocation
  void run_started(const std::string& step, const RunRecord& run);
  void run_finished(const std::string& step, const RunRecord& run);
  bool wants_output() const { return verbosity_ == Verbosity::Verbose; }
  // On a terminal `width` columns wide: the heartbeat as one status line rewritten in place
  // (\r) every second instead of a line every heartbeat; the other lines as before.
  void live_status(size_t width);
  void run_output(const std::string& step, const std::string& run, const std::string& line, bool from_stderr);
  // A search's trials done of about how many in all: "trial 5 of about 7", also in the heartbeat.
  void search_progress(const std::string& step, size_t done, size_t about);
  void step_finished(const StepResult& result);
  void interrupted(const std::string& run_dir);
  void warning(const std::string& message);
  void verdict(const std::string& category, const std::string& summary, int exit_code);

 private:
  void emit(const nlohmann::json& event, const std::string& human, bool always = false);
  void clear_live_line();
  void heartbeat_loop();
  std::string step_progress_line();

  std::ostream& out_;
  Verbosity verbosity_;
  LogFormat format_;
  double heartbeat_s_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread heartbeat_;
  // The step now running.
  std::string step_;
  size_t runs_total_ = 0;
  std::vector<double> finished_seconds_;
  std::map<std::string, double> running_since_;  // run name -> its start
  double step_started_ = 0;
  size_t trials_done_ = 0, trials_about_ = 0;  // of the step's search; 0: none
  size_t live_width_ = 0;                      // 0: no live status line
  bool live_shown_ = false;
};

}  // namespace diagnose
