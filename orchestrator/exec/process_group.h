// What a child process does between fork and exec to run in a process group of its own: Ctrl-C
// at the terminal then reaches the engine alone, which decides what to stop (signalling the
// whole group), and not, say, an scancel halfway through. The child starts with no signal
// blocked.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/process/extend.hpp>

namespace diagnose {

struct OwnProcessGroup : boost::process::extend::handler {
  // SIGKILL the child when the engine dies without cleaning up (SIGKILL): a model run must not
  // outlive it. The Slurm runner's short commands (sbatch, squeue, scancel) run without it.
  bool dies_with_engine = true;
  pid_t engine = ::getpid();  // in the engine, before the fork

  explicit OwnProcessGroup(bool dies_with_engine = true) : dies_with_engine(dies_with_engine) {}

  template <typename Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
    if (dies_with_engine) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      // An engine that died between the fork and the line above sent no signal: the child was
      // already an orphan, and would run the model to its end.
      if (::getppid() != engine) ::_exit(127);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
};

}  // namespace diagnose
