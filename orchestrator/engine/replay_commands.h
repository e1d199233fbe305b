// The commands the reports give for running a recorded model run again.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace diagnose {

// "diagnose rerun RUN_DIR STEP [RUN]" (cli/rerun_command.cc): RUN named when the step has several runs.
std::string rerun_command_line(const std::string& run_dir, const std::string& step, const std::string& run,
                               bool several_runs);
// "cd DIR && NAME=value ... argv...": the run's command with the environment it had.
std::string replay_command_line(const std::string& cwd, const std::map<std::string, std::string>& env,
                                const std::vector<std::string>& argv);

}  // namespace diagnose
