// The diagnose binary's commands, one file each in this folder. Each takes its own argv
// (argv[0] is the command's name) and returns the process exit code (engine/verdict.h).
#pragma once

namespace diagnose {

int run_command(int argc, char** argv);  // diagnose [run] workflow.yaml [--resume DIR] ...
// diagnose check model.py [--backend B] [--device D] [--dtype T] [-- args]: the standard workflow on a script.
int check_command(int argc, char** argv);
int validate_command(int argc, char** argv);  // diagnose validate workflow.yaml...
int schema_command(int argc, char** argv);    // diagnose schema
int report_command(int argc, char** argv);    // diagnose report RUN_DIR
// diagnose rerun RUN_DIR [STEP [RUN]]: one recorded model run again, into RUN_DIR/reruns/; 0 the same
// outputs hash, 1 different, 2 usage, 3 the run did not succeed.
int rerun_command(int argc, char** argv);
// diagnose compare -gp GOLDEN -mp MINE ...: the comparison core with msit's flags.
// 0 pass, 1 fail, 2 usage, 3 unreadable.
int compare_command(int argc, char** argv);
// diagnose bisect -o DIR -- CMD...: the fusion-rule bisection on any command, outside a workflow.
int bisect_command(int argc, char** argv);
// diagnose gate workflow.yaml --baseline DIR [--model-version V] [--junit PATH] ...
// 0 gate passed, 1 regression, 2 usage error or no/corrupt baseline, 3 the model run broke.
int gate_command(int argc, char** argv);
// diagnose baseline save RUN_DIR|PLUGIN_RUN|DUMP --to DIR [--run STEP/RUN] [--force]
// diagnose baseline show DIR
int baseline_command(int argc, char** argv);
// diagnose history [--db PATH] [--output NAME] [--workflow NAME] [--limit N]
int history_command(int argc, char** argv);

}  // namespace diagnose
