#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/workflow_session.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

int validate_command(int argc, char** argv) {
  CLI::App app{"Check workflow files without running them.", "diagnose validate"};
  std::vector<std::string> paths;
  std::string runner_kind;
  RunnerOverride runner;
  app.add_option("workflow", paths, "workflow files (YAML)")->required();
  app.add_flag("--runner{check}", runner_kind,
               "also check the runners with the cluster (Slurm commands, partitions, a trial sbatch --test-only); "
               "--runner=slurm checks as if every step ran on Slurm");
  app.add_option("--partition", runner.partition, "Slurm partition for every step");
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;
  if (runner_kind != "check" && !runner_kind.empty()) {
    if (runner_kind != "local" && runner_kind != "slurm") {
      std::cerr << "diagnose validate: --runner takes local or slurm, not '" << runner_kind << "'\n";
      return kExitUsage;
    }
    runner.kind = runner_kind;
  }
  bool all_valid = true;
  for (const std::string& path : paths) {
    std::optional<Workflow> workflow = load_or_report(path);
    if (workflow) {
      Diagnostics runner_problems(path);
      check_runners(*workflow, runner, runner_kind.empty() ? RunnerCheck::File : RunnerCheck::Submission,
                    runner_problems);
      runner_problems.print(std::cerr);
      if (!runner_problems.empty()) workflow.reset();
    }
    if (workflow) std::cout << path << ": ok (" << workflow->steps.size() << " steps)\n";
    all_valid = all_valid && workflow.has_value();
  }
  return all_valid ? 0 : kExitUsage;
}

}  // namespace diagnose
