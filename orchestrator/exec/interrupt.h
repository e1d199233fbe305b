// Ctrl-C (SIGINT) and SIGTERM: the first asks running children to stop and the
// engine to save a resumable state; the second kills the children at once.
#pragma once

namespace diagnose {

void install_interrupt_handlers();
// How many interrupts arrived since start (or the last reset).
int interrupt_count();
// What the signal handler does; also used by tests.
void request_interrupt();
void reset_interrupts();

}  // namespace diagnose
