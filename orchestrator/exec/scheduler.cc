#include "orchestrator/exec/scheduler.h"

#include <algorithm>
#include <atomic>
#include <boost/filesystem.hpp>
#include <mutex>
#include <thread>

#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/rank_group.h"
#include "orchestrator/exec/subprocess.h"
#include "orchestrator/exec/warm_launcher.h"
#include "orchestrator/util/clock.h"

namespace diagnose {

namespace fs = boost::filesystem;

RunRecord record_for(const RunRequest& request) {
  RunRecord r;
  static_cast<RunCommand&>(r) = request;
  r.stdout_path = request.dir + "/stdout.log";
  r.stderr_path = request.dir + "/stderr.log";
  return r;
}

bool worth_retrying(RunStatus s) {
  return s == RunStatus::Failed || s == RunStatus::Crashed || s == RunStatus::TimedOut ||
         s == RunStatus::MissingOutputs;
}

void check_outputs(const RunRequest& request, RunRecord& record) {
  if (record.status != RunStatus::Succeeded) return;
  for (const std::string& output : request.outputs) {
    if (!fs::exists(output)) {
      record.status = RunStatus::MissingOutputs;
      record.error = "declared output " + output + " was not created";
      return;
    }
  }
}

std::string rank_group_launch_reason(const std::vector<std::string>& argv, bool warm, int ranks) {
  const std::string started = std::to_string(ranks) + " ranks, each started as a process as torchrun starts them";
  if (!warm) return started + "; runner.warm is off";
  if (!forkable_plugin_argv(argv)) return started + "; not a plugin command (a shell: or argv: model)";
  return started +
         ", not forked from the warm process although runner.warm is on: it forks one process per run, "
         "and a rank group's ranks each need an environment of their own (RANK, LOCAL_RANK) and are "
         "watched together (the first rank that fails stops the others)";
}

namespace {

// A rank group's ranks start as processes (rank_group_launch_reason). The plugin's tools run
// once, in a world of one rank, where the script they run up to its first compiled call can set
// up its process group.
Launched launch(const ProcessSpec& spec, bool warm, int ranks, const ProcessCallbacks& callbacks) {
  if (ranks <= 1) return launch_process(spec, warm, callbacks);
  if (plugin_tool_argv(spec.argv)) {
    ProcessSpec alone = spec;
    for (const auto& [key, value] : rank_environment(0, 1, free_loopback_port())) alone.env[key] = value;
    return launch_process(alone, warm, callbacks);
  }
  const std::string reason = rank_group_launch_reason(spec.argv, warm, ranks);
  // said in the run's log too where the warm launcher would have forked a single process
  const bool fell_back = warm && forkable_plugin_argv(spec.argv);
  return {run_rank_group(spec, ranks, callbacks, fell_back ? reason : ""), kLaunchProcess, reason};
}

RunRecord execute(const RunRequest& request, double kill_grace_s, bool warm, int ranks,
                  const std::function<void(int)>& on_start,
                  const std::function<void(const std::string&, bool)>& on_output) {
  RunRecord record = record_for(request);
  record.ranks = plugin_tool_argv(request.argv) ? 1 : ranks;
  boost::system::error_code ignored;
  fs::create_directories(request.dir, ignored);
  fs::create_directories(request.dump_dir, ignored);
  ProcessSpec spec{request.argv,       request.cwd,       request.env,  record.stdout_path,
                   record.stderr_path, request.timeout_s, kill_grace_s, request.never_forked};
  for (int attempt = 1; attempt <= 1 + request.retries; ++attempt) {
    record.attempts = attempt;
    Launched launched = launch(spec, warm, ranks, {on_start, on_output});
    const ProcessOutcome& outcome = launched.outcome;
    record.launch = launched.launch;
    record.launch_reason = launched.reason;
    static_cast<ProcessEnd&>(record) = outcome;
    record.started = outcome.started;
    record.finished = outcome.finished;
    check_outputs(request, record);
    if (!worth_retrying(record.status) || interrupt_count() > 0) break;
  }
  return record;
}

}  // namespace

void run_in_parallel(const std::vector<RunRequest>& requests, const std::vector<size_t>& indexes, int slots,
                     double kill_grace_s, const SchedulerCallbacks& callbacks, bool warm, int ranks) {
  std::mutex lock;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    while (true) {
      size_t position = next.fetch_add(1);
      if (position >= indexes.size() || interrupt_count() > 0) return;
      size_t index = indexes[position];
      const RunRequest& request = requests[index];
      auto on_start = [&](int) {
        std::lock_guard<std::mutex> guard(lock);
        RunRecord running = record_for(request);
        running.status = RunStatus::Running;
        running.started = now_seconds();
        if (callbacks.on_started) callbacks.on_started(index, running);
      };
      std::function<void(const std::string&, bool)> on_output;
      if (callbacks.on_output) {
        on_output = [&, index](const std::string& line, bool from_stderr) {
          std::lock_guard<std::mutex> guard(lock);
          callbacks.on_output(index, line, from_stderr);
        };
      }
      RunRecord record = execute(request, kill_grace_s, warm, ranks, on_start, on_output);
      std::lock_guard<std::mutex> guard(lock);
      if (callbacks.on_finished) callbacks.on_finished(index, record);
    }
  };
  // A slot is a process: a rank group takes as many as it has ranks.
  bool only_tools =
      std::all_of(indexes.begin(), indexes.end(), [&](size_t i) { return plugin_tool_argv(requests[i].argv); });
  int per_run = only_tools ? 1 : std::max(1, ranks);
  size_t threads = std::min<size_t>(static_cast<size_t>(std::max(1, slots / per_run)), indexes.size());
  std::vector<std::thread> pool;
  for (size_t i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
}

}  // namespace diagnose
