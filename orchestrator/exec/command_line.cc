#include "orchestrator/exec/command_line.h"

namespace diagnose {

std::string shell_quote(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "_-./=:,+@%") == std::string::npos)
    return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string reproduce_command(const std::string& cwd, const std::map<std::string, std::string>& env,
                              const std::vector<std::string>& argv) {
  std::string line = "cd " + shell_quote(cwd) + " &&";
  for (const auto& [key, value] : env) line += " " + key + "=" + shell_quote(value);
  for (const std::string& arg : argv) line += " " + shell_quote(arg);
  return line;
}

}  // namespace diagnose
