// One process, started with Boost.Process in a process group of its own, watched
// until it ends: a timeout stops the whole group (SIGTERM), an interrupt too (SIGINT,
// as Ctrl-C would), then SIGKILL after a grace period or a second interrupt; whatever
// the group left behind is killed when the process exits.
#pragma once

#include <signal.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/exec/log_follower.h"
#include "orchestrator/exec/run_record.h"

namespace diagnose {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up on PATH
  std::string cwd;
  std::map<std::string, std::string> env;  // set on top of the engine's environment
  std::string stdout_path, stderr_path;    // truncated, then written by the process
  double timeout_s = 0;                    // 0: none
  double kill_grace_s = 5;
  // Why the warm launcher must start it as a process even with runner.warm, unless PYTHONHASHSEED
  // is fixed in its environment; "": it may be forked.
  std::string never_forked;
};

// How one process ended (status Succeeded, Failed, Crashed, TimedOut, Interrupted or NotStarted)
// and when it started and ended.
struct ProcessOutcome : ProcessEnd {
  double started = 0, finished = 0;
};

struct ProcessCallbacks {
  std::function<void(int pid)> on_start;
  // New complete lines of output while the process runs (live tail); may be empty.
  std::function<void(const std::string& line, bool from_stderr)> on_output;
};

ProcessOutcome run_process(const ProcessSpec& spec, const ProcessCallbacks& callbacks = {});

// The path of this diagnose binary ("diagnose", looked up on PATH, when /proc cannot tell).
std::string self_executable();

// Starts `spec` (start_problem found its argv[0] at `program`) in a process group of its own, with
// spec.env on top of the engine's environment: its pid, or -1 and `error`. The caller reaps it.
int spawn_process(const ProcessSpec& spec, const std::string& program, std::string& error);
// Whether the child `pid` has ended (then `info` says how), leaving it unreaped.
bool process_ended(int pid, siginfo_t& info);
// SIGKILLs what is left of the child's process group and reaps the child.
void kill_and_reap(int pid);
// The outcome of a process that could not start (NotStarted), for `why`.
ProcessOutcome not_started(double started, const std::string& why);
// The exit code or signal in `info` of an ended child.
void record_end(const siginfo_t& info, ProcessOutcome& outcome);

// What stopped watched process groups; PeerFailed: another group of the same run ended badly.
enum class StopReason { None, Timeout, Interrupt, PeerFailed };
// Follows the logs of the process group `pid` (its leader started at `started`) until `ended()`
// says the leader has ended: a timeout stops the group (SIGTERM), an interrupt too (SIGINT), then
// SIGKILL after the grace period or a second interrupt.
StopReason watch_process_group(int pid, const ProcessSpec& spec, double started, const ProcessCallbacks& callbacks,
                               const std::function<bool()>& ended);
// A log followed while processes run; its lines reach on_output with `prefix` in front.
struct FollowedLog {
  LogFollower follower;
  std::string prefix;
};
// The same for several process groups of one run (a rank group): the timeout, an interrupt and
// `failed()` (some group ended badly) stop all of them, until `ended()` says all have ended.
StopReason watch_process_groups(const std::vector<int>& pids, std::vector<FollowedLog>& logs, const ProcessSpec& spec,
                                double started, const ProcessCallbacks& callbacks, const std::function<bool()>& ended,
                                const std::function<bool()>& failed);
// The status and error of an ended process, from its exit_code or signal and what stopped it.
void judge_outcome(ProcessOutcome& outcome, StopReason reason, double timeout_s);

// Why `spec` cannot start ("" when it can): no command, no working directory, log files it
// cannot empty (it empties them), or argv[0] not on env's PATH nor the engine's. `program`: the
// path argv[0] was found at.
std::string start_problem(const ProcessSpec& spec, std::string& program);
// Held while starting a process: a fork from another thread meanwhile would inherit the file
// descriptors Boost.Process opens without O_CLOEXEC.
std::mutex& spawn_mutex();

}  // namespace diagnose
