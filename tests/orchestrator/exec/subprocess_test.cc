#include "orchestrator/exec/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <csignal>

#include <chrono>
#include <thread>

#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/exec/interrupt.h"
#include "orchestrator/exec/warm_launcher.h"
#include "orchestrator/util/clock.h"
#include "orchestrator/util/log_tail.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

ProcessSpec spec_in(const TempDir& dir, std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.cwd = dir.path();
  spec.stdout_path = dir / "out.log";
  spec.stderr_path = dir / "err.log";
  return spec;
}

TEST(Subprocess, RunsWithItsOwnDirectoryEnvironmentAndLogs) {
  TempDir dir;
  ProcessSpec spec = spec_in(dir, {"sh", "-c", "pwd; echo \"$GREETING\"; echo oops >&2; exit 7"});
  spec.env["GREETING"] = "hello; $(not expanded)";
  ProcessOutcome o = run_process(spec);
  EXPECT_EQ(o.status, RunStatus::Failed);
  EXPECT_EQ(o.exit_code, 7);
  EXPECT_FALSE(o.signal);
  EXPECT_EQ(read_text(dir / "out.log"), fs::canonical(dir.path()).string() + "\nhello; $(not expanded)\n");
  EXPECT_EQ(read_text(dir / "err.log"), "oops\n");
  EXPECT_EQ(o.error, "exit status 7");
}

TEST(Subprocess, ArgumentsAreNotInterpretedByAShell) {
  TempDir dir;
  ProcessOutcome o = run_process(spec_in(dir, {"echo", "a b", "$HOME", "; rm -rf /", "*"}));
  EXPECT_EQ(o.status, RunStatus::Succeeded);
  EXPECT_EQ(read_text(dir / "out.log"), "a b $HOME ; rm -rf / *\n");
}

TEST(Subprocess, RecordsTheSignalThatKilledIt) {
  TempDir dir;
  ProcessOutcome o = run_process(spec_in(dir, {"sh", "-c", "kill -ABRT $$"}));
  EXPECT_EQ(o.status, RunStatus::Crashed);
  EXPECT_EQ(o.signal, SIGABRT);
  EXPECT_FALSE(o.exit_code);
}

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  TempDir dir;
  ProcessSpec spec = spec_in(dir, {"sh", "-c", "sleep 100 & echo $! > child.pid; sleep 100"});
  spec.timeout_s = 0.5;
  spec.kill_grace_s = 1;
  int pid = 0;
  ProcessOutcome o = run_process(spec, {[&](int p) { pid = p; }, nullptr});
  EXPECT_EQ(o.status, RunStatus::TimedOut);
  EXPECT_EQ(o.signal, SIGTERM);  // sh does not ignore it
  EXPECT_LT(o.finished - o.started, 3);
  pid_t child = std::stoi(read_text(dir / "child.pid"));
  EXPECT_TRUE(wait_until([&] { return process_gone(child) && process_gone(pid); }, 2));
}

TEST(Subprocess, ChildrenLeftBehindByANormalExitAreKilled) {
  TempDir dir;
  ProcessOutcome o = run_process(spec_in(dir, {"sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $! > child.pid"}));
  EXPECT_EQ(o.status, RunStatus::Succeeded);
  pid_t child = std::stoi(read_text(dir / "child.pid"));
  EXPECT_TRUE(wait_until([&] { return process_gone(child); }, 2));
}

TEST(Subprocess, InterruptStopsTheRun) {
  TempDir dir;
  reset_interrupts();
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    request_interrupt();
  });
  ProcessOutcome o = run_process(spec_in(dir, {"sleep", "30"}));
  interrupter.join();
  reset_interrupts();
  EXPECT_EQ(o.status, RunStatus::Interrupted);
  EXPECT_LT(o.finished - o.started, 5);
}

TEST(Subprocess, ProblemsBeforeStartAreReportedNotThrown) {
  TempDir dir;
  EXPECT_EQ(run_process(spec_in(dir, {"definitely-not-a-program"})).error,
            "program 'definitely-not-a-program' not found on PATH");
  ProcessSpec missing_dir = spec_in(dir, {"true"});
  missing_dir.cwd = dir / "nope";
  EXPECT_EQ(run_process(missing_dir).status, RunStatus::NotStarted);
  EXPECT_EQ(run_process(spec_in(dir, {})).status, RunStatus::NotStarted);
  ProcessOutcome not_executable = run_process(spec_in(dir, {"/etc/hostname"}));
  EXPECT_EQ(not_executable.status, RunStatus::NotStarted);
}

TEST(Subprocess, LiveOutputArrivesWhileTheProcessRuns) {
  TempDir dir;
  std::vector<std::string> lines;
  double first_line_at = 0;
  ProcessOutcome o = run_process(spec_in(dir, {"sh", "-c", "echo one; sleep 2; echo two >&2; sleep 0.3; printf three"}),
                                 {nullptr, [&](const std::string& line, bool from_stderr) {
                                    if (lines.empty()) first_line_at = now_seconds();
                                    lines.push_back((from_stderr ? "E:" : "O:") + line);
                                  }});
  EXPECT_EQ(o.status, RunStatus::Succeeded);
  EXPECT_EQ(lines, (std::vector<std::string>{"O:one", "E:two", "O:three"}));
  EXPECT_LT(first_line_at, o.finished - 1.0);  // seen while it still ran
}

TEST(Subprocess, LogTailKeepsTheLastLines) {
  TempDir dir;
  std::string text;
  for (int i = 1; i <= 30; ++i) text += "line " + std::to_string(i) + "\n";
  write_text(dir / "log", text);
  EXPECT_EQ(log_tail(dir / "log", 3), "line 28\nline 29\nline 30");
  EXPECT_EQ(log_tail(dir / "missing"), "");
  write_text(dir / "short", "only\n");
  EXPECT_EQ(log_tail(dir / "short", 5), "only");
}

TEST(CommandLine, QuotesForPosixShells) {
  EXPECT_EQ(shell_quote("plain-arg_1.py"), "plain-arg_1.py");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(reproduce_command("/w d", {{"A", "1 2"}}, {"python", "m.py"}), "cd '/w d' && A='1 2' python m.py");
}

// The warm launcher's fallbacks to plain processes; forked runs are tested end to end with the
// plugin's warm parent (tests/python/workflows/test_warm_runs.py).
TEST(WarmLauncher, OnlyThePluginsCommandsAreForked) {
  EXPECT_TRUE(forkable_plugin_argv({"python", "-m", "diagnose_pytorch", "run", "model.py"}));
  EXPECT_FALSE(forkable_plugin_argv({"python", "-m", "diagnose_pytorch", "run"}));
  EXPECT_TRUE(forkable_plugin_argv({"python", "-m", "diagnose_pytorch", "single-op", "--from", "x"}));
  EXPECT_TRUE(forkable_plugin_argv({"python", "-m", "diagnose_pytorch", "ops", "--from", "x"}));
  EXPECT_FALSE(forkable_plugin_argv({"python", "-m", "diagnose_pytorch", "warm"}));
  EXPECT_FALSE(forkable_plugin_argv({"/bin/sh", "-c", "python -m diagnose_pytorch run model.py"}));
}

TEST(WarmLauncher, WarmOffStartsAProcess) {
  TempDir dir;
  Launched launched = launch_process(spec_in(dir, {"sh", "-c", "echo plain; exit 3"}), false);
  EXPECT_EQ(launched.launch, kLaunchProcess);
  EXPECT_EQ(launched.reason, "runner.warm is off");
  EXPECT_EQ(launched.outcome.exit_code, 3);
  EXPECT_EQ(read_text(dir / "out.log"), "plain\n");
}

TEST(WarmLauncher, AShellCommandStartsAProcessEvenWhenWarm) {
  TempDir dir;
  Launched launched = launch_process(spec_in(dir, {"sh", "-c", "exit 0"}), true);
  EXPECT_EQ(launched.launch, kLaunchProcess);
  EXPECT_NE(launched.reason.find("not a plugin command"), std::string::npos) << launched.reason;
  EXPECT_EQ(launched.outcome.status, RunStatus::Succeeded);
}

TEST(WarmLauncher, AParentThatCannotStartFallsBackToAProcessAndSaysWhy) {
  TempDir dir;
  // `false -m diagnose_pytorch warm` ends at once: no parent; the run itself then runs as a process
  for (int run = 0; run < 2; ++run) {
    Launched launched = launch_process(spec_in(dir, {"/bin/false", "-m", "diagnose_pytorch", "run", "m.py"}), true);
    EXPECT_EQ(launched.launch, kLaunchProcess);
    EXPECT_EQ(launched.reason, "the warm process ended before it was ready (exit status 1)");
    EXPECT_EQ(launched.outcome.status, RunStatus::Failed);
    EXPECT_EQ(launched.outcome.exit_code, 1);
  }
}

// A parent that never becomes ready: `<program> -m diagnose_pytorch warm` sleeps.
std::string never_ready_python(const TempDir& dir) {
  std::string program = dir / "never_ready_python";
  write_text(program, "#!/bin/sh\nexec sleep 60\n");
  ::chmod(program.c_str(), 0755);
  return program;
}

TEST(WarmLauncher, CtrlCWhileTheParentStartsStopsTheWaitAndKillsIt) {
  TempDir dir, other;
  ProcessSpec spec = spec_in(dir, {never_ready_python(dir), "-m", "diagnose_pytorch", "run", "m.py"});
  Launched launched;
  std::thread waiting([&] { launched = launch_process(spec, true); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Another parent starts meanwhile: nothing holds a lock while a parent imports torch.
  auto started = std::chrono::steady_clock::now();
  Launched beside = launch_process(spec_in(other, {"/bin/false", "-m", "diagnose_pytorch", "run", "m.py"}), true);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(beside.reason, "the warm process ended before it was ready (exit status 1)");
  request_interrupt();
  started = std::chrono::steady_clock::now();
  waiting.join();
  reset_interrupts();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_EQ(launched.outcome.status, RunStatus::Interrupted);
  EXPECT_EQ(launched.launch, kLaunchProcess);
  EXPECT_EQ(launched.reason, "not started: interrupted while the warm process started");
}

TEST(WarmLauncher, ARepeatThatLooksForRunToRunDifferencesIsNotForked) {
  TempDir dir;
  ProcessSpec spec = spec_in(dir, {"/bin/false", "-m", "diagnose_pytorch", "run", "m.py"});
  spec.never_forked = kRepeatNeverForked;
  Launched launched = launch_process(spec, true);
  EXPECT_EQ(launched.launch, kLaunchProcess);
  EXPECT_EQ(launched.reason, kRepeatNeverForked);
  // with a fixed hash seed a fork is the same run: the warm process is asked (and here ends)
  spec.env["PYTHONHASHSEED"] = "0";
  launched = launch_process(spec, true);
  EXPECT_EQ(launched.reason, "the warm process ended before it was ready (exit status 1)");
}

// A run forked from the plugin's real warm parent (the .venv's python, as the end-to-end tests').
TEST(WarmLauncher, AForkedRunLeadsItsGroupAtOnceAndHasOnlyItsStdioOpen) {
  TempDir dir;
  const int stray = ::open("/dev/null", O_RDONLY);  // an engine's descriptor without O_CLOEXEC
  write_text(dir / "spec.json", nlohmann::json{{"output_dir", dir / "out"}, {"mode", "eager"}}.dump());
  write_text(dir / "fds.py",
             "import json, os\nlinks = {}\nfor fd in os.listdir('/proc/self/fd'):\n"
             "    try:\n        links[fd] = os.readlink(f'/proc/self/fd/{fd}')\n"
             "    except OSError:\n        pass  # the listing's own\n"
             "open('fds.json', 'w').write(json.dumps(links))\n");
  bool leads_its_group = false;
  ProcessCallbacks callbacks;
  callbacks.on_start = [&](int pid) { leads_its_group = ::getpgid(pid) == pid && ::getsid(pid) == pid; };
  Launched launched =
      launch_process(spec_in(dir, {python(), "-m", "diagnose_pytorch", "run", "--spec", dir / "spec.json", "fds.py"}),
                     true, callbacks);
  ::close(stray);
  ASSERT_EQ(launched.launch, kLaunchWarmFork) << launched.reason;
  EXPECT_EQ(launched.outcome.status, RunStatus::Succeeded) << read_text(dir / "err.log");
  EXPECT_TRUE(leads_its_group);
  // stdin, the logs, and what the run itself opened in its directory
  nlohmann::json links = read_json(dir / "fds.json");
  EXPECT_EQ(links.value("0", ""), "/dev/null");
  EXPECT_EQ(links.value("1", ""), dir / "out.log");
  EXPECT_EQ(links.value("2", ""), dir / "err.log");
  for (const auto& [fd, link] : links.items()) {
    if (std::stoi(fd) > 2) {
      EXPECT_EQ(link.get<std::string>().rfind(dir.path() + "/", 0), 0u) << fd << " " << link;
    }
  }
}

// At the engine's end its warm parents are ended and reaped: none outlives it, and what they and
// their runs used is the engine's children's.
TEST(WarmLauncher, EndingTheWarmProcessesReapsThemWithTheirRunsCpuTime) {
  TempDir dir;
  write_text(dir / "spec.json", nlohmann::json{{"output_dir", dir / "out"}, {"mode", "eager"}}.dump());
  write_text(dir / "busy.py",
             "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end:\n    pass\n");
  auto children_cpu_s = [] {
    rusage usage{};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + 1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  };
  const double before = children_cpu_s();
  Launched launched = launch_process(
      spec_in(dir, {python(), "-m", "diagnose_pytorch", "run", "--spec", dir / "spec.json", "busy.py"}), true);
  ASSERT_EQ(launched.launch, kLaunchWarmFork) << launched.reason;
  EXPECT_EQ(launched.outcome.status, RunStatus::Succeeded) << read_text(dir / "err.log");
  const pid_t parent = std::stoi(launched.reason.substr(launched.reason.rfind(' ') + 1));
  ASSERT_EQ(::kill(parent, 0), 0);
  end_warm_processes();
  EXPECT_NE(::kill(parent, 0), 0);            // reaped: no such process
  EXPECT_GE(children_cpu_s() - before, 1.0);  // at least the run's busy second
  // later runs start as processes
  launched = launch_process(
      spec_in(dir, {python(), "-m", "diagnose_pytorch", "run", "--spec", dir / "spec.json", "busy.py"}), true);
  EXPECT_EQ(launched.launch, kLaunchProcess);
  EXPECT_EQ(launched.reason, "the warm process was ended");
}

}  // namespace
}  // namespace diagnose
