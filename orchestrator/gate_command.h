// The CI commands: the gate, the baseline store and the history of runs. Each takes its own
// argv (argv[0] is the command name) and returns the process exit code.
#pragma once

namespace diagnose {

// diagnose gate workflow.yaml --baseline DIR [--model-version V] [--junit PATH] ...
// 0 gate passed, 1 regression, 2 usage error or no/corrupt baseline, 3 the model run broke.
int gate_command(int argc, char** argv);
// diagnose baseline save RUN_DIR|PLUGIN_RUN|DUMP --to DIR [--run STEP/RUN] [--force]
// diagnose baseline show DIR
int baseline_command(int argc, char** argv);
// diagnose history [--db PATH] [--output NAME] [--workflow NAME] [--limit N]
int history_command(int argc, char** argv);

}  // namespace diagnose
