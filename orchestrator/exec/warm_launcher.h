// Model runs forked from a warm parent instead of started as processes: `<python> -m
// diagnose_pytorch warm` (plugins/pytorch/diagnose_pytorch/runtime/warm.py) imports torch and the plugin
// once, then forks a child per run, which keeps a plain process's semantics (process group,
// cwd, environment, logs, exit status, timeout and kill). One parent per interpreter and
// environment (less the per-run DIAGNOSE_* variables), started by the first run that needs it
// and kept for the whole invocation; the protocol is JSON lines over a Unix socket.
//
// Only the plugin's `run` is forked, and only where the local runner has `warm: true`; anything
// else, a repeat that looks for run-to-run differences (ProcessSpec::never_forked), a parent that
// could not start or died, or one that refuses (an accelerator initialised in it, an environment
// that differs) runs as a plain process (run_process), and says why. A run whose parent dies
// while it runs has crashed (its group is killed); Ctrl-C while a parent starts kills that parent.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/exec/subprocess.h"

namespace diagnose {

extern const char* const kLaunchWarmFork;  // "warm_fork"
extern const char* const kLaunchProcess;   // "process"

struct Launched {
  ProcessOutcome outcome;
  std::string launch;  // kLaunchWarmFork or kLaunchProcess
  std::string reason;  // why, in words
};

// Runs `spec` forked from a warm parent when `warm` allows and the run may be, otherwise as a
// plain process.
Launched launch_process(const ProcessSpec& spec, bool warm, const ProcessCallbacks& callbacks = {});

// Ends every warm parent of this invocation and waits for it (SIGKILL after 10 s), once no run is
// going on: what it and its forked runs used then counts among the engine's children's resources
// (getrusage, wait4), and none outlives the engine. Later runs start as processes.
void end_warm_processes();

// Whether argv is a plugin command a warm parent forks: `<python> -m diagnose_pytorch run
// SCRIPT ...`, `single-op ...` or `ops ...`.
bool forkable_plugin_argv(const std::vector<std::string>& argv);
// Whether argv is one of the plugin's own tools (`single-op`, `ops`), which read a run's dumps and
// run as one process whatever runner.ranks says, rather than the model.
bool plugin_tool_argv(const std::vector<std::string>& argv);

}  // namespace diagnose
