#include "orchestrator/exec/warm_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "orchestrator/exec/interrupt.h"
#include "orchestrator/util/clock.h"

extern char** environ;

namespace diagnose {

const char* const kLaunchWarmFork = "warm_fork";
const char* const kLaunchProcess = "process";

namespace {

namespace fs = boost::filesystem;

// Variables that differ between runs of one parent: the run's spec and dump paths (warm.py).
constexpr const char* kPerRunPrefix = "DIAGNOSE_";
constexpr size_t kMaxParents = 4;       // each holds an imported torch in memory
constexpr double kReadyTimeoutS = 300;  // importing torch on a loaded machine takes tens of seconds
constexpr double kReplyTimeoutS = 60;

bool per_run(const std::string& name) { return name.rfind(kPerRunPrefix, 0) == 0; }

// Whether every process with `env` has the same hash seed (Python's PYTHONHASHSEED).
bool hash_seed_fixed(const std::map<std::string, std::string>& env) {
  auto seed = env.find("PYTHONHASHSEED");
  return seed != env.end() && !seed->second.empty() && seed->second != "random";
}

std::map<std::string, std::string> engine_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    std::string text = *entry;
    size_t equals = text.find('=');
    if (equals != std::string::npos) env.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return env;
}

std::optional<int> int_field(const nlohmann::json& message, const char* key) {
  auto found = message.find(key);
  if (found == message.end() || !found->is_number_integer()) return std::nullopt;
  return found->get<int>();
}

std::string text_field(const nlohmann::json& message, const char* key) {
  auto found = message.find(key);
  return found != message.end() && found->is_string() ? found->get<std::string>() : "";
}

std::string how_it_ended(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "ended";
}

// A run forked from a parent, as the parent reported it.
struct ForkedRun {
  std::optional<int> pid, exit_code, signal;
  std::string refused;
  bool ended() const { return exit_code || signal; }
};

constexpr const char* kInterruptedWhileStarting = "interrupted while the warm process started";

class WarmParent {
 public:
  // Starts the parent with exactly `env`; wait_ready() waits for it.
  WarmParent(const std::string& program, const std::map<std::string, std::string>& env) { start(program, env); }

  // Waits until the parent is ready (""), or says why it will fork nothing: it refused, ended,
  // was not ready in time, or Ctrl-C came meanwhile (kInterruptedWhileStarting), which kills it.
  std::string wait_ready() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kReadyTimeoutS);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!ready_ && dead_.empty()) {
      if (interrupt_count() > 0)
        kill_parent(kInterruptedWhileStarting);
      else if (std::chrono::steady_clock::now() > deadline)
        kill_parent("the warm process was not ready after " + std::to_string(static_cast<int>(kReadyTimeoutS)) + " s");
      else
        changed_.wait_for(lock, kPollInterval);
    }
    return dead_;
  }

  pid_t pid() const { return pid_; }

  // Ends its input, which ends it (and kills what its runs left), and waits until it is reaped:
  // what it and its runs used counts among this engine's children's resources. SIGKILL after
  // `grace_s`. It forks nothing more.
  void end(double grace_s) {
    if (socket_ < 0) return;  // it never started
    std::unique_lock<std::mutex> lock(mutex_);
    if (dead_.empty()) dead_ = "the warm process was ended";
    ::shutdown(socket_, SHUT_WR);
    if (!changed_.wait_for(lock, std::chrono::duration<double>(grace_s), [&] { return exited_; }))
      ::kill(pid_, SIGKILL);
    changed_.wait(lock, [&] { return exited_; });
  }

  // Asks for a fork of `spec` with environment `env`: the run's id and the child's pid, or
  // nullopt and why not.
  std::optional<long> fork_run(const ProcessSpec& spec, const std::map<std::string, std::string>& env, int& child,
                               std::string& why_not) {
    nlohmann::json request = {{"argv", spec.argv},
                              {"cwd", spec.cwd},
                              {"env", env},
                              {"stdout", spec.stdout_path},
                              {"stderr", spec.stderr_path}};
    std::unique_lock<std::mutex> lock(mutex_);
    if (!dead_.empty()) {
      why_not = dead_;
      return std::nullopt;
    }
    long id = next_id_++;
    request["id"] = id;
    std::string line;
    try {
      line = request.dump() + "\n";
    } catch (const nlohmann::json::exception&) {  // JSON strings must be UTF-8
      why_not = "a path, argument or environment value is not UTF-8";
      return std::nullopt;
    }
    runs_[id];
    lock.unlock();
    send(line);
    lock.lock();
    // A fork and the child's setsid take milliseconds: a parent that does not answer is stuck.
    if (!changed_.wait_for(lock, std::chrono::duration<double>(kReplyTimeoutS),
                           [&] { return runs_[id].pid || !runs_[id].refused.empty() || !dead_.empty(); }))
      kill_parent("the warm process did not answer a fork request in " +
                  std::to_string(static_cast<int>(kReplyTimeoutS)) + " s");
    ForkedRun run = runs_[id];
    if (run.pid) {
      child = *run.pid;
      return id;
    }
    runs_.erase(id);
    why_not = run.refused.empty() ? dead_ : "the warm process refused: " + run.refused;
    return std::nullopt;
  }

  // Whether run `id` has ended, or the parent has died (which killed the run's group).
  bool ended(long id) {
    std::lock_guard<std::mutex> guard(mutex_);
    return runs_[id].ended() || !dead_.empty();
  }

  // What the parent said of run `id`, which is forgotten; the parent may then reap it (the engine
  // signals its group no more), and why the parent died if it did before the run ended.
  ForkedRun take(long id, std::string& parent_death) {
    std::unique_lock<std::mutex> lock(mutex_);
    ForkedRun run = runs_[id];
    runs_.erase(id);
    parent_death = run.ended() ? "" : dead_;
    lock.unlock();
    if (run.ended()) send(nlohmann::json{{"release", id}}.dump() + "\n");
    return run;
  }

 private:
  static constexpr std::chrono::milliseconds kPollInterval{100};

  void start(const std::string& program, const std::map<std::string, std::string>& env) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      dead_ = std::string("cannot create the warm process's socket: ") + std::strerror(errno);
      return;
    }
    std::vector<std::string> args = {program, "-m", "diagnose_pytorch", "warm"}, entries;
    for (const auto& [key, value] : env) entries.push_back(key + "=" + value);
    std::vector<char*> argv, envp;
    for (std::string& arg : args) argv.push_back(arg.data());
    for (std::string& entry : entries) envp.push_back(entry.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    // The socket is its stdin and stdout, and no other descriptor of the engine reaches it (nor
    // so the runs it forks); in a process group of its own, like a model run.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    int error;
    {
      std::lock_guard<std::mutex> guard(spawn_mutex());
      error = ::posix_spawn(&pid_, program.c_str(), &actions, &attributes, argv.data(), envp.data());
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(fds[1]);
    if (error != 0) {
      ::close(fds[0]);
      dead_ = "cannot start " + program + ": " + std::strerror(error);
      return;
    }
    socket_ = fds[0];
    // Detached: it ends when the parent does, at the latest when this engine's exit closes the socket.
    std::thread([this] { read_messages(); }).detach();
  }

  // Under mutex_: the parent is unusable for `why`; SIGKILL ends it (the reader then sees it end).
  void kill_parent(const std::string& why) {
    dead_ = why;
    if (!exited_) ::kill(pid_, SIGKILL);
    changed_.notify_all();
  }

  void send(const std::string& line) {
    std::lock_guard<std::mutex> guard(sending_);
    size_t sent = 0;
    while (sent < line.size()) {
      ssize_t n = ::send(socket_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the parent is gone: the reader sees the socket close and says so
      sent += static_cast<size_t>(n);
    }
  }

  void read_messages() {
    std::string buffer;
    char chunk[4096];
    while (true) {
      ssize_t n = ::recv(socket_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      for (size_t newline; (newline = buffer.find('\n')) != std::string::npos;) {
        nlohmann::json message = nlohmann::json::parse(buffer.substr(0, newline), nullptr, false);
        buffer.erase(0, newline + 1);
        std::lock_guard<std::mutex> guard(mutex_);
        if (message.is_object()) receive(message);
        changed_.notify_all();
      }
    }
    // Unreaped until every signal below is sent: its pid cannot be reused meanwhile.
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    int status = 0;
    std::lock_guard<std::mutex> guard(mutex_);
    // The runs it forked died with it (PR_SET_PDEATHSIG); what they started in their groups is
    // killed here, once, and their waits end.
    for (const auto& [id, run] : runs_)
      if (run.pid && !run.ended()) ::killpg(*run.pid, SIGKILL);
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    if (dead_.empty())
      dead_ = std::string(ready_ ? "the warm process died (" : "the warm process ended before it was ready (") +
              how_it_ended(status) + ")";
    changed_.notify_all();
  }

  void receive(const nlohmann::json& message) {
    std::optional<int> id = int_field(message, "id");
    if (!id) {
      const auto ready = message.find("ready");
      if (ready != message.end() && *ready == true) ready_ = true;
      if (std::string refused = text_field(message, "refused"); !refused.empty())
        dead_ = "the warm process refused: " + refused;
      return;
    }
    auto run = runs_.find(*id);
    if (run == runs_.end()) return;
    if (std::optional<int> pid = int_field(message, "pid")) run->second.pid = pid;
    run->second.refused = text_field(message, "refused");
    if (std::optional<int> code = int_field(message, "exit_code")) run->second.exit_code = code;
    if (std::optional<int> signal = int_field(message, "signal")) run->second.signal = signal;
  }

  std::mutex mutex_, sending_;
  std::condition_variable changed_;
  int socket_ = -1;
  pid_t pid_ = -1;
  bool ready_ = false, exited_ = false;  // exited_: reaped, its pid no longer its own
  std::string dead_;                     // why it forks no more runs
  long next_id_ = 0;
  std::map<long, ForkedRun> runs_;
};

// The parents by interpreter and environment, and the mutex that guards the map. Never
// destroyed: their reader threads may outlive main.
std::mutex parents_mutex;
std::map<std::string, std::unique_ptr<WarmParent>>* parents = new std::map<std::string, std::unique_ptr<WarmParent>>;

// The parent for `key` (interpreter and environment), started on first use and ready; nullptr
// and why when there is none.
WarmParent* parent_for(const std::string& key, const std::string& program,
                       const std::map<std::string, std::string>& env, std::string& why_not) {
  WarmParent* parent;
  {
    // Held only to find or start one: the wait for its import of torch is outside.
    std::lock_guard<std::mutex> guard(parents_mutex);
    auto found = parents->find(key);
    if (found == parents->end()) {
      if (parents->size() >= kMaxParents) {
        why_not = std::to_string(kMaxParents) + " warm processes already, for other interpreters or environments";
        return nullptr;
      }
      found = parents->emplace(key, std::make_unique<WarmParent>(program, env)).first;
    }
    parent = found->second.get();
  }
  why_not = parent->wait_ready();
  return why_not.empty() ? parent : nullptr;
}

}  // namespace

void end_warm_processes() {
  constexpr double kEndGraceS = 10;
  std::lock_guard<std::mutex> guard(parents_mutex);
  // kept, ended: their reader threads may still be leaving
  for (auto& [key, parent] : *parents) parent->end(kEndGraceS);
}

bool forkable_plugin_argv(const std::vector<std::string>& argv) {
  if (argv.size() < 4 || argv[1] != "-m" || argv[2] != "diagnose_pytorch") return false;
  return argv[3] == "run" ? argv.size() >= 5 : argv[3] == "single-op" || argv[3] == "ops";
}

bool plugin_tool_argv(const std::vector<std::string>& argv) { return forkable_plugin_argv(argv) && argv[3] != "run"; }

Launched launch_process(const ProcessSpec& spec, bool warm, const ProcessCallbacks& callbacks) {
  auto plain = [&](const std::string& reason) {
    return Launched{run_process(spec, callbacks), kLaunchProcess, reason};
  };
  if (!warm) return plain("runner.warm is off");
  if (!forkable_plugin_argv(spec.argv)) return plain("not a plugin command (a shell: or argv: model)");
  std::string program;
  if (std::string problem = start_problem(spec, program); !problem.empty()) return plain(problem);
  program = fs::absolute(program, spec.cwd).string();  // as the plain process resolves it, from its cwd

  std::map<std::string, std::string> env = engine_environment(), parent_env;
  for (const auto& [key, value] : spec.env) env[key] = value;
  std::string parent_key = program;
  for (const auto& [key, value] : env) {
    if (per_run(key)) continue;
    parent_env.emplace(key, value);
    parent_key += '\n' + key + '=' + value;
  }
  if (!spec.never_forked.empty() && !hash_seed_fixed(env)) return plain(spec.never_forked);
  std::string why_not;
  WarmParent* parent = parent_for(parent_key, program, parent_env, why_not);
  if (why_not == kInterruptedWhileStarting) {
    ProcessOutcome outcome;
    outcome.started = outcome.finished = now_seconds();
    outcome.status = RunStatus::Interrupted;
    outcome.error = kInterruptedWhileStarting;
    return {outcome, kLaunchProcess, "not started: " + why_not};
  }
  if (!parent) return plain(why_not);

  ProcessOutcome outcome;
  outcome.started = now_seconds();
  int pid = 0;
  std::optional<long> id = parent->fork_run(spec, env, pid, why_not);
  if (!id) return plain(why_not);
  if (callbacks.on_start) callbacks.on_start(pid);
  StopReason stop = watch_process_group(pid, spec, outcome.started, callbacks, [&] { return parent->ended(*id); });
  std::string parent_death;
  ForkedRun run = parent->take(*id, parent_death);
  outcome.finished = now_seconds();
  const std::string launched_from = "forked from warm process " + std::to_string(parent->pid());
  if (!parent_death.empty()) {
    outcome.status = RunStatus::Crashed;
    outcome.error = parent_death + " during the run, which was killed with its process group";
    return {outcome, kLaunchWarmFork, launched_from};
  }
  outcome.exit_code = run.exit_code;
  outcome.signal = run.signal;
  judge_outcome(outcome, stop, spec.timeout_s);
  return {outcome, kLaunchWarmFork, launched_from};
}

}  // namespace diagnose
