#include "orchestrator/exec/rank_group.h"
#include "orchestrator/util/clock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>

namespace diagnose {

std::map<std::string, std::string> rank_environment(int rank, int ranks, int master_port) {
  return {{"RANK", std::to_string(rank)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"GROUP_RANK", "0"},
          {"WORLD_SIZE", std::to_string(ranks)},
          {"LOCAL_WORLD_SIZE", std::to_string(ranks)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(master_port)}};
}

int free_loopback_port() {
  static std::mutex guard;
  static std::set<int> handed_out;
  std::lock_guard<std::mutex> lock(guard);
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int port = 0;
    // Port 0: the kernel picks one that is free, at random in its ephemeral range, so that two
    // engines at once rarely draw the same; one engine never hands a port out twice.
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
      port = ntohs(address.sin_port);
    ::close(fd);
    if (port > 0 && handed_out.insert(port).second) return port;
  }
  return 0;
}

std::string rank_log_path(const std::string& run_log, int rank) {
  const std::string suffix = ".log";
  const std::string tag = "_rank" + std::to_string(rank);
  bool has_suffix =
      run_log.size() >= suffix.size() && run_log.compare(run_log.size() - suffix.size(), suffix.size(), suffix) == 0;
  return has_suffix ? run_log.substr(0, run_log.size() - suffix.size()) + tag + suffix : run_log + tag;
}

namespace {

struct Rank {
  int pid = -1;
  siginfo_t info{};
  bool ended = false;
  double ended_at = 0;
  std::string stdout_path, stderr_path;
};

bool ended_badly(const siginfo_t& info) { return info.si_code != CLD_EXITED || info.si_status != 0; }

std::string how_it_ended(const siginfo_t& info) {
  ProcessOutcome outcome;
  record_end(info, outcome);
  judge_outcome(outcome, StopReason::None, 0);
  return outcome.error.empty() ? "exit status 0" : outcome.error;
}

std::string read_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The run's own log: `note` first, then every rank's, each under a line that says how it ended, in `order`.
void write_group_log(const std::string& path, const std::string& note, const std::vector<Rank>& group,
                     const std::vector<int>& order, const std::vector<std::string>& ends, bool from_stderr) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!note.empty()) out << "diagnose: " << note << "\n";
  for (int r : order) {
    std::string text = read_log(from_stderr ? group[r].stderr_path : group[r].stdout_path);
    if (!text.empty() && text.back() != '\n') text += '\n';
    out << "==> rank " << r << ": " << ends[r] << " <==\n" << text;
  }
}

}  // namespace

ProcessOutcome run_rank_group(const ProcessSpec& spec, int ranks, const ProcessCallbacks& callbacks,
                              const std::string& note) {
  ProcessOutcome outcome;
  outcome.started = now_seconds();
  std::string program;
  if (std::string problem = start_problem(spec, program); !problem.empty())
    return not_started(outcome.started, problem);
  const int port = free_loopback_port();
  if (port == 0) return not_started(outcome.started, "no free TCP port on 127.0.0.1 for MASTER_PORT");

  std::vector<Rank> group(static_cast<size_t>(ranks));
  std::vector<FollowedLog> logs;
  std::vector<int> pids;
  for (int r = 0; r < ranks; ++r) {
    Rank& rank = group[static_cast<size_t>(r)];
    ProcessSpec rank_spec = spec;
    for (const auto& [key, value] : rank_environment(r, ranks, port)) rank_spec.env[key] = value;
    // As torchrun: one thread per rank unless the user chose, the ranks share the machine's cores.
    if (!spec.env.count("OMP_NUM_THREADS") && !std::getenv("OMP_NUM_THREADS")) rank_spec.env["OMP_NUM_THREADS"] = "1";
    rank_spec.stdout_path = rank.stdout_path = rank_log_path(spec.stdout_path, r);
    rank_spec.stderr_path = rank.stderr_path = rank_log_path(spec.stderr_path, r);
    std::string error = start_problem(rank_spec, program);
    if (error.empty()) rank.pid = spawn_process(rank_spec, program, error);
    if (rank.pid < 0) {
      for (int started : pids) kill_and_reap(started);
      return not_started(outcome.started, "rank " + std::to_string(r) + ": " + error);
    }
    pids.push_back(rank.pid);
    const std::string prefix = "[rank " + std::to_string(r) + "] ";
    logs.push_back({{rank.stdout_path, false}, prefix});
    logs.push_back({{rank.stderr_path, true}, prefix});
  }
  if (callbacks.on_start) callbacks.on_start(pids.front());
  if (callbacks.on_output && !note.empty()) callbacks.on_output("diagnose: " + note, true);

  std::optional<int> first_failed;
  auto all_ended = [&] {
    bool all = true;
    for (size_t r = 0; r < group.size(); ++r) {
      Rank& rank = group[r];
      if (!rank.ended && process_ended(rank.pid, rank.info)) {
        rank.ended = true;
        rank.ended_at = now_seconds();
        if (!first_failed && ended_badly(rank.info)) first_failed = static_cast<int>(r);
      }
      all = all && rank.ended;
    }
    return all;
  };
  StopReason reason = watch_process_groups(pids, logs, spec, outcome.started, callbacks, all_ended,
                                           [&] { return first_failed.has_value(); });
  for (int pid : pids) kill_and_reap(pid);
  outcome.finished = now_seconds();

  // How each rank ended, and the order of the run's logs: the rank to blame last, where a tail shows it.
  std::vector<std::string> ends(group.size());
  std::vector<int> innocent, to_blame;
  const double failed_at = first_failed ? group[static_cast<size_t>(*first_failed)].ended_at : 0;
  for (size_t r = 0; r < group.size(); ++r) {
    const Rank& rank = group[r];
    const int index = static_cast<int>(r);
    if (reason == StopReason::Timeout && rank.ended_at > outcome.started + spec.timeout_s) {
      ends[r] = "still running at the timeout";
      to_blame.push_back(index);
    } else if (first_failed == index) {
      ends[r] = how_it_ended(rank.info) + ", the first rank to fail";
      to_blame.push_back(index);
    } else {
      ends[r] = how_it_ended(rank.info);
      if (first_failed && rank.ended_at >= failed_at)
        ends[r] += " after rank " + std::to_string(*first_failed) + " failed";
      innocent.push_back(index);
    }
  }
  std::vector<int> order = innocent;
  order.insert(order.end(), to_blame.begin(), to_blame.end());
  write_group_log(spec.stdout_path, "", group, order, ends, false);
  write_group_log(spec.stderr_path, note, group, order, ends, true);
  std::string every_rank;  // the ranks to blame first
  for (const std::vector<int>* ranks_of : {&to_blame, &innocent})
    for (int r : *ranks_of)
      every_rank +=
          (every_rank.empty() ? "rank " : "; rank ") + std::to_string(r) + ": " + ends[static_cast<size_t>(r)];

  if (reason == StopReason::Timeout || reason == StopReason::Interrupt) {
    judge_outcome(outcome, reason, spec.timeout_s);
    outcome.error += " (" + every_rank + ")";
  } else if (first_failed) {
    record_end(group[static_cast<size_t>(*first_failed)].info, outcome);
    judge_outcome(outcome, StopReason::None, spec.timeout_s);
    outcome.error = every_rank;
  } else {
    outcome.exit_code = 0;
    judge_outcome(outcome, StopReason::None, spec.timeout_s);
  }
  return outcome;
}

}  // namespace diagnose
