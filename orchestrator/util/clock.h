// Wall-clock time as runs, states and reports record it.
#pragma once

namespace diagnose {

// Seconds since the epoch.
double now_seconds();

}  // namespace diagnose
