#include "orchestrator/util/clock.h"

#include <chrono>

namespace diagnose {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace diagnose
