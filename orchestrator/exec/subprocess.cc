#include "orchestrator/exec/subprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/log_follower.h"
#include "orchestrator/exec/process_group.h"
#include "orchestrator/util/clock.h"

namespace diagnose {

namespace bp = boost::process;
namespace fs = boost::filesystem;

namespace {

bool truncate_file(const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  return static_cast<bool>(out);
}

std::string find_program(const std::string& name, const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  auto path_override = env.find("PATH");
  const char* path = path_override != env.end() ? path_override->second.c_str() : std::getenv("PATH");
  std::vector<fs::path> directories;
  std::string all = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= all.size()) {
    size_t colon = all.find(':', start);
    if (colon == std::string::npos) colon = all.size();
    directories.emplace_back(colon == start ? "." : all.substr(start, colon - start));
    start = colon + 1;
  }
  return bp::search_path(name, directories).string();
}

}  // namespace

std::mutex& spawn_mutex() {
  static std::mutex spawning;
  return spawning;
}

std::string start_problem(const ProcessSpec& spec, std::string& program) {
  if (spec.argv.empty()) return "empty command";
  if (!fs::is_directory(spec.cwd)) return "working directory " + spec.cwd + " does not exist";
  if (!truncate_file(spec.stdout_path) || !truncate_file(spec.stderr_path))
    return "cannot create log files in " + fs::path(spec.stdout_path).parent_path().string();
  program = find_program(spec.argv[0], spec.env);
  if (program.empty()) return "program '" + spec.argv[0] + "' not found on PATH";
  return "";
}

std::string self_executable() {
  boost::system::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "diagnose" : self.string();
}

int spawn_process(const ProcessSpec& spec, const std::string& program, std::string& error) {
  bp::environment env = boost::this_process::environment();
  // Not env[key]: Boost 1.74's environment::find reads past entries shorter than the key.
  for (const auto& [key, value] : spec.env) env.set(key, value);
  std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());

  std::error_code failed;
  bp::child child;
  {
    // Boost.Process opens the log files and its exec-error pipe without O_CLOEXEC; a fork
    // from another thread in that moment would inherit them, and the pipe's copy would make
    // this spawn wait until that other child exits. One spawn at a time avoids both.
    std::lock_guard<std::mutex> guard(spawn_mutex());
    child = bp::child(bp::exe = program, bp::args = args, bp::start_dir = spec.cwd, env,
                      bp::std_in<bp::null, bp::std_out> fs::path(spec.stdout_path),
                      bp::std_err > fs::path(spec.stderr_path), OwnProcessGroup{}, failed);
  }
  if (failed) {
    error = "cannot start " + spec.argv[0] + ": " + failed.message();
    return -1;
  }
  const pid_t pid = child.id();
  child.detach();       // reaped by the caller, once its group is killed
  ::setpgid(pid, pid);  // also from this side, so a kill right now already reaches the group
  return pid;
}

bool process_ended(int pid, siginfo_t& info) {
  std::memset(&info, 0, sizeof info);
  // WNOWAIT leaves the child unreaped, so its pid (the group id) cannot be reused before the
  // group is killed.
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

void kill_and_reap(int pid) {
  ::killpg(pid, SIGKILL);  // children the process left behind
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void record_end(const siginfo_t& info, ProcessOutcome& outcome) {
  if (info.si_code == CLD_EXITED)
    outcome.exit_code = info.si_status;
  else
    outcome.signal = info.si_status;
}

ProcessOutcome not_started(double started, const std::string& why) {
  ProcessOutcome outcome;
  outcome.started = started;
  outcome.status = RunStatus::NotStarted;
  outcome.error = why;
  outcome.finished = now_seconds();
  return outcome;
}

ProcessOutcome run_process(const ProcessSpec& spec, const ProcessCallbacks& callbacks) {
  ProcessOutcome outcome;
  outcome.started = now_seconds();
  std::string program, error;
  if (std::string problem = start_problem(spec, program); !problem.empty())
    return not_started(outcome.started, problem);
  const int pid = spawn_process(spec, program, error);
  if (pid < 0) return not_started(outcome.started, error);
  if (callbacks.on_start) callbacks.on_start(pid);

  siginfo_t info;
  StopReason reason =
      watch_process_group(pid, spec, outcome.started, callbacks, [&] { return process_ended(pid, info); });
  kill_and_reap(pid);
  outcome.finished = now_seconds();
  record_end(info, outcome);
  judge_outcome(outcome, reason, spec.timeout_s);
  return outcome;
}

StopReason watch_process_group(int pid, const ProcessSpec& spec, double started, const ProcessCallbacks& callbacks,
                               const std::function<bool()>& ended) {
  std::vector<FollowedLog> logs = {{{spec.stdout_path, false}, ""}, {{spec.stderr_path, true}, ""}};
  return watch_process_groups({pid}, logs, spec, started, callbacks, ended, [] { return false; });
}

StopReason watch_process_groups(const std::vector<int>& pids, std::vector<FollowedLog>& logs, const ProcessSpec& spec,
                                double started, const ProcessCallbacks& callbacks, const std::function<bool()>& ended,
                                const std::function<bool()>& failed) {
  auto follow = [&](bool flush) {
    if (!callbacks.on_output) return;
    for (FollowedLog& log : logs)
      log.follower.poll(
          [&](const std::string& line, bool from_stderr) { callbacks.on_output(log.prefix + line, from_stderr); },
          flush);
  };
  auto signal_all = [&](int signal) {
    for (int pid : pids) ::killpg(pid, signal);
  };
  StopReason reason = StopReason::None;
  double terminate_sent = 0;
  bool kill_sent = false;
  auto poll_interval = std::chrono::milliseconds(5);
  while (!ended()) {
    follow(false);
    double now = now_seconds();
    int interrupts = interrupt_count();
    if (reason == StopReason::None) {
      if (interrupts > 0)
        reason = StopReason::Interrupt;
      else if (spec.timeout_s > 0 && now - started > spec.timeout_s)
        reason = StopReason::Timeout;
      else if (failed())
        reason = StopReason::PeerFailed;
      // Ctrl-C reaches the model as the terminal would have sent it; a timeout as SIGTERM.
      if (reason != StopReason::None) {
        signal_all(reason == StopReason::Interrupt ? SIGINT : SIGTERM);
        terminate_sent = now;
      }
    }
    if (reason != StopReason::None && !kill_sent && (interrupts > 1 || now - terminate_sent > spec.kill_grace_s)) {
      signal_all(SIGKILL);
      kill_sent = true;
    }
    std::this_thread::sleep_for(poll_interval);
    poll_interval = std::min(poll_interval * 2, std::chrono::milliseconds(100));
  }
  follow(true);
  return reason;
}

void judge_outcome(ProcessOutcome& outcome, StopReason reason, double timeout_s) {
  if (reason == StopReason::Timeout) {
    outcome.status = RunStatus::TimedOut;
    outcome.error =
        "timed out after " + std::to_string(static_cast<long long>(timeout_s)) + " s; killed with its children";
  } else if (reason == StopReason::Interrupt) {
    outcome.status = RunStatus::Interrupted;
    outcome.error = "interrupted";
  } else if (outcome.signal) {
    outcome.status = RunStatus::Crashed;
    outcome.error =
        std::string("killed by signal ") + std::to_string(*outcome.signal) + " (" + ::strsignal(*outcome.signal) + ")";
  } else if (*outcome.exit_code != 0) {
    outcome.status = RunStatus::Failed;
    outcome.error = "exit status " + std::to_string(*outcome.exit_code);
  } else {
    outcome.status = RunStatus::Succeeded;
  }
}

}  // namespace diagnose
