#include "compare/mapped_file.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>

namespace diagnose::compare {

std::unique_ptr<MappedRange> MappedRange::map(int fd, uint64_t offset, uint64_t size) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t length = offset - start + size;
  if (size == 0) return nullptr;
  void* base = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED) return nullptr;
  const uint8_t* data = static_cast<const uint8_t*>(base) + (offset - start);
  return std::unique_ptr<MappedRange>(new MappedRange(base, length, offset, size, data));
}

MappedRange::~MappedRange() { ::munmap(base_, length_); }

namespace {

thread_local sigjmp_buf* t_guard = nullptr;
struct sigaction g_previous;

void on_sigbus(int signal, siginfo_t* info, void* context) {
  if (t_guard) siglongjmp(*t_guard, 1);
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal);
  } else {
    // Returning re-runs the faulting access, which now meets the default action.
    ::signal(SIGBUS, SIG_DFL);
  }
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous);
  });
}

}  // namespace

bool guard_mapped_reads(const std::function<void()>& body) {
  install_handler();
  sigjmp_buf jump;
  sigjmp_buf* const outer = t_guard;
  if (sigsetjmp(jump, 1) != 0) {  // 1: the signal mask comes back too (SIGBUS was blocked in the handler)
    t_guard = outer;
    return false;
  }
  t_guard = &jump;
  body();
  t_guard = outer;
  return true;
}

}  // namespace diagnose::compare
