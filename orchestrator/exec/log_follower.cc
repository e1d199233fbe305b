#include "orchestrator/exec/log_follower.h"

#include <fstream>

namespace diagnose {

void LogFollower::poll(const std::function<void(const std::string&, bool)>& on_line, bool flush_partial) {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  char chunk[4096];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    pending_.append(chunk, static_cast<size_t>(in.gcount()));
    offset_ += static_cast<size_t>(in.gcount());
  }
  size_t newline;
  while ((newline = pending_.find('\n')) != std::string::npos) {
    on_line(pending_.substr(0, newline), from_stderr_);
    pending_.erase(0, newline + 1);
  }
  if (flush_partial && !pending_.empty()) {
    on_line(pending_, from_stderr_);
    pending_.clear();
  }
}

}  // namespace diagnose
