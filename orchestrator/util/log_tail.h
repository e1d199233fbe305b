// The end of a log file, as reports and errors quote it.
#pragma once

#include <cstddef>
#include <string>

namespace diagnose {

// The last `max_lines` lines of a log file (at most `max_bytes` from its end); "" when unreadable.
std::string log_tail(const std::string& path, int max_lines = 20, size_t max_bytes = 8192);

}  // namespace diagnose
