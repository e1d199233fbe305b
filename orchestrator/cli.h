// The engine's commands. Each takes its own argv (argv[0] is the command name)
// and returns the process exit code (verdict.h ExitCode).
#pragma once

namespace diagnose {

int run_command(int argc, char** argv);       // diagnose [run] workflow.yaml [--resume DIR] ...
int validate_command(int argc, char** argv);  // diagnose validate workflow.yaml...
int schema_command(int argc, char** argv);    // diagnose schema
int report_command(int argc, char** argv);    // diagnose report RUN_DIR

}  // namespace diagnose
