// Commands written for humans to paste into a POSIX shell (reproduce lines in reports).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace diagnose {

// 'text' with single quotes, unless it is made only of safe characters.
std::string shell_quote(const std::string& text);
// cd DIR && NAME=value ... argv...
std::string reproduce_command(const std::string& cwd, const std::map<std::string, std::string>& env,
                              const std::vector<std::string>& argv);

}  // namespace diagnose
