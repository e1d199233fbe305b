// diagnose: precision-debug workflow orchestrator for PyTorch graph mode.
#include <cstring>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "orchestrator/exec/warm_launcher.h"
#include "steps/kinds/step_kinds.h"

namespace {

void print_usage(std::ostream& out) {
  out << "usage: diagnose <workflow.yaml> [options]     run a workflow (same as 'diagnose run')\n"
         "       diagnose <command> [options]\n\n"
         "commands:\n"
         "  check     the standard workflow on a script, no YAML: diagnose check model.py [-- args]\n"
         "  run       run a workflow: diagnose run workflow.yaml [--resume RUN_DIR]\n"
         "  validate  check workflow files without running them\n"
         "  schema    print the JSON Schema of the workflow format\n"
         "  report    render the reports of a run directory again\n"
         "  rerun     run one recorded model run again: diagnose rerun RUN_DIR [STEP [RUN]]\n"
         "  compare   compare two dumps (TorchAir GE/FX, npy, diagnose dumps)\n"
         "  gate      CI gate: the model version under test against a baseline (--baseline DIR)\n"
         "  baseline  save or show a gate baseline: diagnose baseline save RUN_DIR --to DIR\n"
         "  history   list recorded runs, or an output's trend across model versions\n"
         "  bisect    find the fusion rule(s) that make a command fail: diagnose bisect -o DIR -- CMD ...\n\n"
         "exit codes: 0 no precision problem, 1 precision problem diagnosed, 2 workflow or usage error,\n"
         "            3 infrastructure failure (a run crashed or timed out), 130 interrupted (resumable)\n\n"
         "Run 'diagnose <command> --help' for a command's options.\n";
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return 2;
  }
  std::string command = argv[1];
  if (command == "-h" || command == "--help") {
    print_usage(std::cout);
    return 0;
  }
  if (command == "compare") return diagnose::compare_command(argc - 1, argv + 1);
  if (command == "bisect") return diagnose::bisect_command(argc - 1, argv + 1);
  if (command == "check") return diagnose::check_command(argc - 1, argv + 1);
  if (command == "run") return diagnose::run_command(argc - 1, argv + 1);
  if (command == "validate") return diagnose::validate_command(argc - 1, argv + 1);
  if (command == "schema") return diagnose::schema_command(argc - 1, argv + 1);
  if (command == "report") return diagnose::report_command(argc - 1, argv + 1);
  if (command == "rerun") return diagnose::rerun_command(argc - 1, argv + 1);
  if (command == "gate") return diagnose::gate_command(argc - 1, argv + 1);
  if (command == "baseline") return diagnose::baseline_command(argc - 1, argv + 1);
  if (command == "history") return diagnose::history_command(argc - 1, argv + 1);
  if (!command.empty() && command[0] != '-') return diagnose::run_command(argc, argv);  // argv[1] is the workflow
  std::cerr << "diagnose: unknown command '" << command << "'\n";
  print_usage(std::cerr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  diagnose::register_step_kinds();
  int code = dispatch(argc, argv);
  diagnose::end_warm_processes();
  return code;
}
