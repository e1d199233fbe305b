// One process, started with Boost.Process in a process group of its own, watched
// until it ends: a timeout stops the whole group (SIGTERM), an interrupt too (SIGINT,
// as Ctrl-C would), then SIGKILL after a grace period or a second interrupt; whatever
// the group left behind is killed when the process exits.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/engine/state.h"

namespace diagnose {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up on PATH
  std::string cwd;
  std::map<std::string, std::string> env;  // set on top of the engine's environment
  std::string stdout_path, stderr_path;    // truncated, then written by the process
  double timeout_s = 0;                    // 0: none
  double kill_grace_s = 5;
};

struct ProcessOutcome {
  RunStatus status = RunStatus::Pending;  // Succeeded, Failed, Crashed, TimedOut, Interrupted or NotStarted
  std::optional<int> exit_code;
  std::optional<int> signal;
  double started = 0, finished = 0;
  std::string error;  // in words, when not Succeeded
};

struct ProcessCallbacks {
  std::function<void(int pid)> on_start;
  // New complete lines of output while the process runs (live tail); may be empty.
  std::function<void(const std::string& line, bool from_stderr)> on_output;
};

ProcessOutcome run_process(const ProcessSpec& spec, const ProcessCallbacks& callbacks = {});

// The last `max_lines` lines of a log file (at most `max_bytes` from its end).
std::string log_tail(const std::string& path, int max_lines = 20, size_t max_bytes = 8192);

double now_seconds();

}  // namespace diagnose
