#include "orchestrator/exec/interrupt.h"

#include <atomic>
#include <csignal>

namespace diagnose {

namespace {
std::atomic<int> interrupts{0};

extern "C" void on_signal(int) { interrupts.fetch_add(1); }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_count() { return interrupts.load(); }
void request_interrupt() { interrupts.fetch_add(1); }
void reset_interrupts() { interrupts.store(0); }

}  // namespace diagnose
