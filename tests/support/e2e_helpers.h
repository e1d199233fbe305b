// Helpers for the end-to-end tests: a scratch directory, the diagnose binary run
// as a real process, and the files it leaves.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/files.h"
#include "tests/support/source_tree.h"

namespace diagnose::testing_support {

namespace fs = boost::filesystem;

inline nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_text(path)); }

inline std::string python() {
  std::string venv = source_dir() + "/.venv/bin/python";
  return fs::exists(venv) ? venv : "python3";
}

inline std::string script(const std::string& name) { return source_dir() + "/tests/support/scripts/" + name; }

// A workflow's model section: the stand-in model (scripts/model.py) run by the project's Python.
inline std::string stand_in_model_yaml() { return "model:\n  argv: [" + python() + ", " + script("model.py") + "]\n"; }

// Three steps: `eager` and `graph`, the stand-in in each mode dumping its ops (`graph_args` end
// the graph run's arguments: "--perturb, relu" plants an error from that op on), and `compare`,
// the graph dump against the eager one, diagnosing `diagnoses` and continuing when it fails.
inline std::string stand_in_comparison_steps(const std::string& graph_args, const std::string& diagnoses) {
  return R"yaml(  - id: eager
    kind: run
    args: [--mode, eager, --dump, "${run.dump_dir}"]
    outputs: ["${run.dump_dir}/00_embedding.npy"]
  - id: graph
    kind: run
    args: [--mode, graph, --dump, "${run.dump_dir}", )yaml" +
         graph_args + R"yaml(]
  - id: compare
    kind: compare
    golden: ${steps.eager.dump_dir}
    target: ${steps.graph.dump_dir}
    diagnoses: )yaml" +
         diagnoses + R"yaml(
    on_failure: continue
)yaml";
}

// The diagnose binary, started in `cwd` with stdout/stderr captured to files.
class DiagnoseProcess {
 public:
  DiagnoseProcess(const std::vector<std::string>& args, const std::string& cwd,
                  const std::vector<std::pair<std::string, std::string>>& env = {})
      : out_path_(cwd + "/diagnose.stdout"), err_path_(cwd + "/diagnose.stderr") {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (::chdir(cwd.c_str()) != 0) ::_exit(127);
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
      std::vector<char*> argv;
      std::string binary = diagnose_binary();
      argv.push_back(binary.data());
      std::vector<std::string> copy = args;
      for (std::string& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~DiagnoseProcess() {
    if (!reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  // The exit status; 128+N for a signal N.
  int wait() {
    if (!reaped_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      reaped_ = true;
    }
    return code_;
  }
  std::string out() const { return read_text(out_path_); }
  std::string err() const { return read_text(err_path_); }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int code_ = -1;
  std::string out_path_, err_path_;
};

struct Finished {
  int code;
  std::string out, err;
};

inline Finished run_diagnose(const std::vector<std::string>& args, const std::string& cwd,
                             const std::vector<std::pair<std::string, std::string>>& env = {}) {
  DiagnoseProcess p(args, cwd, env);
  int code = p.wait();
  return {code, p.out(), p.err()};
}

// The one run directory under `runs_dir`.
inline std::string only_run_dir(const std::string& runs_dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(runs_dir))
    if (fs::is_directory(entry)) found.push_back(entry.path().string());
  return found.size() == 1 ? found[0] : "";
}

// True when `pid` is gone (or a zombie nobody reaped yet: it runs no more).
inline bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

template <typename Predicate>
bool wait_until(Predicate done, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace diagnose::testing_support
