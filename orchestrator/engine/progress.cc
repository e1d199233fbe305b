#include "orchestrator/engine/progress.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "orchestrator/util/clock.h"

namespace diagnose {

std::string seconds_text(double s) {
  std::ostringstream out;
  if (s < 60)
    out << std::fixed << std::setprecision(1) << s << "s";
  else
    out << static_cast<long long>(s) / 60 << "m" << std::setw(2) << std::setfill('0') << static_cast<long long>(s) % 60
        << "s";
  return out.str();
}

std::string trial_text(size_t done, size_t about) {
  return done >= about ? std::to_string(done) + " trials in all"
                       : "trial " + std::to_string(done) + " of about " + std::to_string(about);
}

std::optional<TimeLeft> estimate_time_left(const RunsSoFar& runs) {
  if (runs.finished_seconds.empty() || (runs.running_seconds.empty() && runs.queued == 0)) return std::nullopt;
  TimeLeft left;
  for (double s : runs.finished_seconds) left.mean_run_seconds += s;
  left.mean_run_seconds /= static_cast<double>(runs.finished_seconds.size());
  double work = static_cast<double>(runs.queued) * left.mean_run_seconds, longest_running = 0;
  for (double s : runs.running_seconds) {
    double rest = std::max(0.0, left.mean_run_seconds - s);
    left.overdue = left.overdue || s > left.mean_run_seconds;
    work += rest;
    longest_running = std::max(longest_running, rest);
  }
  double parallel = std::max<double>(1, static_cast<double>(runs.running_seconds.size()));
  left.seconds = std::max(longest_running, work / parallel);
  return left;
}

Progress::Progress(std::ostream& out, Verbosity verbosity, LogFormat format, double heartbeat_s)
    : out_(out), verbosity_(verbosity), format_(format), heartbeat_s_(heartbeat_s) {
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> guard(lock_);
    stopping_ = true;
    clear_live_line();
  }
  wake_.notify_all();
  heartbeat_.join();
}

void Progress::emit(const nlohmann::json& event, const std::string& human, bool always) {
  if (format_ == LogFormat::Json) {
    nlohmann::json e = event;
    e["time"] = now_seconds();
    out_ << e.dump() << "\n" << std::flush;
    return;
  }
  if (verbosity_ == Verbosity::Quiet && !always) return;
  clear_live_line();
  out_ << human << "\n" << std::flush;
}

void Progress::clear_live_line() {
  if (!live_shown_) return;
  out_ << "\r\033[K" << std::flush;
  live_shown_ = false;
}

void Progress::live_status(size_t width) {
  std::lock_guard<std::mutex> guard(lock_);
  live_width_ = width;
  heartbeat_s_ = std::min(heartbeat_s_, 1.0);
  wake_.notify_all();
}

std::string Progress::step_progress_line() {
  double now = now_seconds();
  RunsSoFar runs{finished_seconds_, {}, 0};
  for (const auto& [name, started] : running_since_) runs.running_seconds.push_back(now - started);
  size_t started_runs = finished_seconds_.size() + running_since_.size();
  runs.queued = runs_total_ > started_runs ? runs_total_ - started_runs : 0;
  std::ostringstream line;
  line << "  " << step_ << ": " << finished_seconds_.size() << "/" << runs_total_ << " runs done, "
       << running_since_.size() << " running, " << seconds_text(now - step_started_) << " elapsed";
  if (trials_about_ > 0) line << ", " << trial_text(trials_done_, trials_about_);
  if (std::optional<TimeLeft> left = estimate_time_left(runs)) {
    std::string mean = "the finished runs' mean of " + seconds_text(left->mean_run_seconds);
    if (left->overdue && left->seconds < 0.05)
      line << ", a run is past " << mean;
    else
      line << ", about " << seconds_text(left->seconds) << " left"
           << (left->overdue ? " after the run past " + mean : "");
  }
  return line.str();
}

void Progress::heartbeat_loop() {
  std::unique_lock<std::mutex> guard(lock_);
  while (!stopping_) {
    wake_.wait_for(guard, std::chrono::duration<double>(heartbeat_s_));
    if (stopping_) break;
    if (step_.empty() || runs_total_ == 0 || now_seconds() - step_started_ < heartbeat_s_) continue;
    if (live_width_ > 0 && format_ == LogFormat::Human) {
      if (verbosity_ == Verbosity::Quiet) continue;
      std::string line = step_progress_line();
      if (line.size() >= live_width_) line.resize(live_width_ - 1);  // a wrapped line is not rewritten
      out_ << "\r" << line << "\033[K" << std::flush;
      live_shown_ = true;
      continue;
    }
    emit({{"event", "heartbeat"},
          {"step", step_},
          {"runs_done", finished_seconds_.size()},
          {"runs_total", runs_total_},
          {"elapsed", now_seconds() - step_started_}},
         step_progress_line());
  }
}

void Progress::workflow_started(const std::string& name, const std::string& run_dir, bool resumed, size_t steps) {
  std::lock_guard<std::mutex> guard(lock_);
  emit(
      {{"event", "workflow_started"}, {"workflow", name}, {"run_dir", run_dir}, {"resumed", resumed}, {"steps", steps}},
      std::string(resumed ? "resuming " : "running ") + name + " (" + std::to_string(steps) + " steps) in " + run_dir);
}

void Progress::step_started(const std::string& id, size_t index, size_t total) {
  std::lock_guard<std::mutex> guard(lock_);
  step_ = id;
  runs_total_ = 0;
  finished_seconds_.clear();
  running_since_.clear();
  step_started_ = now_seconds();
  trials_done_ = trials_about_ = 0;
  emit({{"event", "step_started"}, {"step", id}, {"index", index}, {"total", total}},
       "[" + std::to_string(index + 1) + "/" + std::to_string(total) + "] " + id);
}

void Progress::runs_scheduled(const std::string& step, size_t runs) {
  std::lock_guard<std::mutex> guard(lock_);
  if (runs == 0) return;
  runs_total_ += runs;
  emit({{"event", "runs_scheduled"}, {"step", step}, {"runs", runs}},
       "  " + step + ": starting " + std::to_string(runs) + " run" + (runs > 1 ? "s" : ""));
}

void Progress::step_kept(const StepResult& result) {
  std::lock_guard<std::mutex> guard(lock_);
  emit({{"event", "step_kept"}, {"step", result.id}, {"status", step_status_name(result.status)}},
       "  " + result.id + ": " + step_status_name(result.status) + " (kept from the interrupted invocation)");
}

void Progress::run_started(const std::string& step, const RunRecord& run) {
  std::lock_guard<std::mutex> guard(lock_);
  running_since_[run.name] = run.started > 0 ? run.started : now_seconds();
  if (verbosity_ != Verbosity::Verbose && format_ == LogFormat::Human) return;
  std::string command;
  for (const std::string& a : run.argv) command += (command.empty() ? "" : " ") + a;
  emit({{"event", "run_started"}, {"step", step}, {"run", run.name}, {"argv", run.argv}, {"cwd", run.cwd}},
       "  " + step + "/" + run.name + ": started: " + command);
}

void Progress::run_finished(const std::string& step, const RunRecord& run) {
  std::lock_guard<std::mutex> guard(lock_);
  running_since_.erase(run.name);
  finished_seconds_.push_back(run.finished - run.started);
  std::string done = std::to_string(finished_seconds_.size());
  std::string human = "  " + step + "/" + run.name + ": " + run_status_name(run.status) + " in " +
                      seconds_text(run.finished - run.started);
  if (!run.error.empty() && run.status != RunStatus::Succeeded) human += " (" + run.error + ")";
  if (runs_total_ > 1) human += "  [" + done + "/" + std::to_string(runs_total_) + "]";
  emit({{"event", "run_finished"},
        {"step", step},
        {"run", run.name},
        {"status", run_status_name(run.status)},
        {"exit_code", run.exit_code ? nlohmann::json(*run.exit_code) : nlohmann::json()},
        {"signal", run.signal ? nlohmann::json(*run.signal) : nlohmann::json()},
        {"seconds", run.finished - run.started},
        {"runs_done", finished_seconds_.size()},
        {"runs_total", runs_total_}},
       human);
}

void Progress::run_output(const std::string& step, const std::string& run, const std::string& line, bool from_stderr) {
  std::lock_guard<std::mutex> guard(lock_);
  if (verbosity_ != Verbosity::Verbose) return;
  emit({{"event", "output"},
        {"step", step},
        {"run", run},
        {"stream", from_stderr ? "stderr" : "stdout"},
        {"line", line}},
       "    " + step + "/" + run + (from_stderr ? " ! " : " | ") + line);
}

void Progress::search_progress(const std::string& step, size_t done, size_t about) {
  std::lock_guard<std::mutex> guard(lock_);
  if (step != step_ || (done == trials_done_ && about == trials_about_)) return;
  trials_done_ = done;
  trials_about_ = about;
  emit({{"event", "search_progress"}, {"step", step}, {"trials_done", done}, {"trials_about", about}},
       "  " + step + ": " + trial_text(done, about) + (done < about ? " done" : ""));
}

void Progress::step_finished(const StepResult& result) {
  std::lock_guard<std::mutex> guard(lock_);
  step_.clear();
  emit({{"event", "step_finished"},
        {"step", result.id},
        {"status", step_status_name(result.status)},
        {"summary", result.summary},
        {"seconds", result.finished - result.started}},
       "  " + result.id + ": " + step_status_name(result.status) + " - " + result.summary);
}

void Progress::interrupted(const std::string& run_dir) {
  std::lock_guard<std::mutex> guard(lock_);
  emit({{"event", "interrupted"}, {"run_dir", run_dir}},
       "interrupted; continue with: diagnose <workflow.yaml> --resume " + run_dir, true);
}

void Progress::warning(const std::string& message) {
  std::lock_guard<std::mutex> guard(lock_);
  emit({{"event", "warning"}, {"message", message}}, "warning: " + message, true);
}

void Progress::verdict(const std::string& category, const std::string& summary, int exit_code) {
  std::lock_guard<std::mutex> guard(lock_);
  if (format_ != LogFormat::Json) return;  // the terminal summary says it for humans
  emit({{"event", "verdict"}, {"category", category}, {"summary", summary}, {"exit_code", exit_code}}, "");
}

}  // namespace diagnose
