// A process to start, ready to go: what the steps ask the runners for.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace diagnose {

// A run as a command: what a step asks to start (RunRequest) and what ran (RunRecord).
struct RunCommand {
  std::string name;               // unique within the step
  std::vector<std::string> argv;  // as executed (a shell form is /bin/sh -c TEXT)
  std::string cwd;
  std::map<std::string, std::string> env;  // variables set on top of the engine's environment
  std::string dir, dump_dir;               // the run's directory (a shared run's: its first requester's) and its dump
};

// A process a step needs, ready to start: templates expanded, paths absolute.
struct RunRequest : RunCommand {
  double timeout_s = 0;
  int retries = 0;
  std::vector<std::string> outputs;  // must exist after the run
  std::string spec_identity;         // a plugin run's spec (shared_runs.h); empty: never shared
  int repeat = 0;                    // earlier runs of this configuration the step asked for (shared_runs.h)
  std::string never_forked;          // why it starts as a process of its own even with runner.warm; "": may be forked
};

// A repeat of a configuration that looks for run-to-run differences: forked from the warm process
// that forked the first run, it would share that run's hash seed (PYTHONHASHSEED unset).
inline constexpr const char* kRepeatNeverForked =
    "a repeat that looks for run-to-run differences: a fork would share the first run's hash seed";

}  // namespace diagnose
