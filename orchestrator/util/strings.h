// Text helpers shared by the engine's floors.
#pragma once

#include <string>
#include <vector>

namespace diagnose {

// `items` with `separator` between them: "a, b, c".
std::string joined(const std::vector<std::string>& items, const std::string& separator = ", ");

}  // namespace diagnose
