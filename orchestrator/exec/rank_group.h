// A local multi-rank run (`runner: {ranks: N}` with the local runner): N processes of one run,
// started the way `torchrun --nproc_per_node N` starts its workers, each with RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR 127.0.0.1 and a MASTER_PORT of its own run (free,
// and never handed to two runs of one engine), each in a process group of its own with its own
// logs (stdout_rank{R}.log, stderr_rank{R}.log beside the run's). The run succeeds when every
// rank does; the first rank that ends badly stops the others (SIGTERM, SIGKILL after the grace
// period), as torchrun does, since a peer waits for it in a collective; the timeout and Ctrl-C
// apply to the whole group. The error names every rank and how it ended, and the run's own
// stdout.log and stderr.log then hold every rank's log, the rank that failed first last.
#pragma once

#include <map>
#include <string>

#include "orchestrator/exec/subprocess.h"

namespace diagnose {

// What a rank's process gets on top of the run's environment.
std::map<std::string, std::string> rank_environment(int rank, int ranks, int master_port);
// A TCP port of 127.0.0.1 that nothing listens on now and this engine handed out to no other run;
// 0 when none could be found.
int free_loopback_port();
// A rank's log beside the run's: ".../stderr.log" -> ".../stderr_rank1.log".
std::string rank_log_path(const std::string& run_log, int rank);

// `note`, when not empty, heads the run's stderr.log and is passed to callbacks.on_output when the
// ranks start ("diagnose: NOTE"): why the ranks start as processes although runner.warm is on.
ProcessOutcome run_rank_group(const ProcessSpec& spec, int ranks, const ProcessCallbacks& callbacks = {},
                              const std::string& note = "");

}  // namespace diagnose
