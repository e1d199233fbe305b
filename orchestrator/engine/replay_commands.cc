#include "orchestrator/engine/replay_commands.h"

#include "orchestrator/exec/command_line.h"

namespace diagnose {

std::string rerun_command_line(const std::string& run_dir, const std::string& step, const std::string& run,
                               bool several_runs) {
  return "diagnose rerun " + shell_quote(run_dir) + " " + shell_quote(step) +
         (several_runs ? " " + shell_quote(run) : "");
}

std::string replay_command_line(const std::string& cwd, const std::map<std::string, std::string>& env,
                                const std::vector<std::string>& argv) {
  return reproduce_command(cwd, env, argv);
}

}  // namespace diagnose
