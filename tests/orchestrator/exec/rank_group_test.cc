#include "orchestrator/exec/rank_group.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "orchestrator/util/log_tail.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

ProcessSpec group_spec(const TempDir& dir, const std::string& shell) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", shell};
  spec.cwd = dir.path();
  spec.stdout_path = dir / "stdout.log";
  spec.stderr_path = dir / "stderr.log";
  spec.kill_grace_s = 1;
  return spec;
}

TEST(RankGroup, EveryRankGetsTorchrunsEnvironmentAndItsOwnLogs) {
  TempDir dir;
  ProcessOutcome o = run_rank_group(
      group_spec(dir,
                 "echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT; echo e$RANK >&2"),
      2);
  ASSERT_EQ(o.status, RunStatus::Succeeded) << o.error;
  std::string rank0 = read_text(dir / "stdout_rank0.log"), rank1 = read_text(dir / "stdout_rank1.log");
  std::string port = rank0.substr(rank0.rfind(' ') + 1);
  EXPECT_EQ(rank0, "0 2 0 2 127.0.0.1 " + port);
  EXPECT_EQ(rank1, "1 2 1 2 127.0.0.1 " + port);
  EXPECT_GT(std::stoi(port), 0);
  EXPECT_EQ(read_text(dir / "stderr_rank1.log"), "e1\n");
  EXPECT_EQ(read_text(dir / "stderr.log"), "==> rank 0: exit status 0 <==\ne0\n==> rank 1: exit status 0 <==\ne1\n");
}

TEST(RankGroup, ARankExitingNonZeroFailsTheRunAndStopsTheOthers) {
  TempDir dir;
  ProcessOutcome o = run_rank_group(
      // rank 1 fails only once rank 0 has printed, so the log's contents do not depend on which starts first
      group_spec(dir,
                 "if [ $RANK = 1 ]; then while [ ! -e waiting ]; do sleep 0.01; done; echo boom >&2; exit 3; fi; "
                 "echo waiting in a collective; touch waiting; exec sleep 100"),
      2);
  EXPECT_EQ(o.status, RunStatus::Failed);
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_LT(o.finished - o.started, 5);
  EXPECT_EQ(
      o.error,
      "rank 1: exit status 3, the first rank to fail; rank 0: killed by signal 15 (Terminated) after rank 1 failed");
  // every rank's log, the failing rank's last, where a tail shows it
  EXPECT_EQ(read_text(dir / "stdout.log"),
            "==> rank 0: killed by signal 15 (Terminated) after rank 1 failed <==\nwaiting in a collective\n"
            "==> rank 1: exit status 3, the first rank to fail <==\n");
  EXPECT_EQ(log_tail(dir / "stderr.log", 1), "boom");
}

TEST(RankGroup, AHangingRankIsKilledWithItsChildrenAtTheGroupsTimeout) {
  TempDir dir;
  ProcessSpec spec = group_spec(dir, "echo started; if [ $RANK = 1 ]; then sleep 100 & echo $! > child.pid; wait; fi");
  spec.timeout_s = 1;
  ProcessOutcome o = run_rank_group(spec, 2);
  EXPECT_EQ(o.status, RunStatus::TimedOut);
  EXPECT_LT(o.finished - o.started, 5);
  EXPECT_EQ(
      o.error,
      "timed out after 1 s; killed with its children (rank 1: still running at the timeout; rank 0: exit status 0)");
  EXPECT_EQ(read_text(dir / "stdout.log"),
            "==> rank 0: exit status 0 <==\nstarted\n==> rank 1: still running at the timeout <==\nstarted\n");
  pid_t child = std::stoi(read_text(dir / "child.pid"));
  EXPECT_TRUE(wait_until([&] { return process_gone(child); }, 2));
}

TEST(RankGroup, TwoGroupsAtOnceListenOnPortsOfTheirOwn) {
  // rank 0 of each group listens on its MASTER_PORT for a second, as torch.distributed's store does
  const std::string listen =
      "if [ $RANK = 0 ]; then exec python3 -c 'import os, socket, time; s = socket.socket(); "
      "s.bind((os.environ[\"MASTER_ADDR\"], int(os.environ[\"MASTER_PORT\"]))); s.listen(); time.sleep(1)'; fi";
  TempDir first, second;
  ProcessOutcome a, b;
  std::thread other([&] { b = run_rank_group(group_spec(second, listen + "; echo $MASTER_PORT"), 2); });
  a = run_rank_group(group_spec(first, listen + "; echo $MASTER_PORT"), 2);
  other.join();
  EXPECT_EQ(a.status, RunStatus::Succeeded) << a.error << read_text(first / "stderr.log");
  EXPECT_EQ(b.status, RunStatus::Succeeded) << b.error << read_text(second / "stderr.log");
  EXPECT_NE(read_text(first / "stdout_rank1.log"), read_text(second / "stdout_rank1.log"));
}

TEST(RankGroup, AProgramNotFoundStartsNoRank) {
  TempDir dir;
  ProcessSpec spec = group_spec(dir, "true");
  spec.argv = {"no-such-program-of-diagnose"};
  ProcessOutcome o = run_rank_group(spec, 2);
  EXPECT_EQ(o.status, RunStatus::NotStarted);
  EXPECT_EQ(o.error, "program 'no-such-program-of-diagnose' not found on PATH");
}

TEST(RankGroup, RankLogsLieBesideTheRunsLogs) {
  EXPECT_EQ(rank_log_path("/r/stderr.log", 1), "/r/stderr_rank1.log");
  EXPECT_EQ(rank_log_path("/r/out", 0), "/r/out_rank0");
}

}  // namespace
}  // namespace diagnose
