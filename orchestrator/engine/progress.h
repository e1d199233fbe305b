// What the engine tells the terminal while it runs: the current step, runs done of
// total, elapsed time and an estimate for long steps. Human lines on stderr, or one
// JSON object per line (--log-format json) for machines.
#pragma once

#include <condition_variable>
#include <iosfwd>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"

namespace diagnose {

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
  void run_output(const std::string& step, const std::string& run, const std::string& line, bool from_stderr);
  void step_finished(const StepResult& result);
  void interrupted(const std::string& run_dir);
  void warning(const std::string& message);
  void verdict(const std::string& category, const std::string& summary, int exit_code);

 private:
  void emit(const nlohmann::json& event, const std::string& human, bool always = false);
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
  size_t runs_total_ = 0, runs_done_ = 0, runs_running_ = 0;
  double step_started_ = 0, run_seconds_ = 0;
};

}  // namespace diagnose
