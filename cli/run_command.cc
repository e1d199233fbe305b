#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/workflow_session.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/exec/interrupt.h"

namespace diagnose {

namespace fs = boost::filesystem;

int run_command(int argc, char** argv) {
  CLI::App app{"Run a diagnostic workflow and print its verdict.", "diagnose"};
  std::string workflow_path, resume_dir, output_dir, log_format = "human";
  int slots = 0;
  RunnerOverride runner;
  bool quiet = false, verbose = false, json = false;
  app.add_option("workflow", workflow_path, "workflow file (YAML)")->required();
  app.add_option("--resume", resume_dir, "continue this run directory, re-running only what did not complete");
  app.add_option("--output-dir", output_dir, "where to create the run directory (default: defaults.output_dir)");
  app.add_option("--slots", slots, "model runs at the same time (default: defaults.slots)")->check(CLI::PositiveNumber);
  app.add_option("--runner", runner.kind,
                 "run the models here (local) or as Slurm jobs (slurm), whatever the workflow says")
      ->check(CLI::IsMember({"local", "slurm"}));
  app.add_option("--partition", runner.partition, "Slurm partition for every step");
  auto* quiet_flag = app.add_flag("-q,--quiet", quiet, "print only the verdict");
  app.add_flag("-v,--verbose", verbose, "also print the runs' output as it appears")->excludes(quiet_flag);
  app.add_flag("--json", json, "print the verdict as report.json's verdict object");
  app.add_option("--log-format", log_format, "progress as human text or JSON lines")
      ->check(CLI::IsMember({"human", "json"}));
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;

  std::optional<Workflow> workflow = load_or_report(workflow_path);
  if (!workflow) return kExitUsage;
  Diagnostics runner_problems(workflow_path);
  check_runners(*workflow, runner, RunnerCheck::Cluster, runner_problems);
  runner_problems.print(std::cerr);
  if (!runner_problems.empty()) return kExitUsage;
  if (!resume_dir.empty() && !fs::exists(state_path(resume_dir))) {
    std::cerr << "diagnose: " << resume_dir << " is not a run directory (no state.json)\n";
    return kExitUsage;
  }

  install_interrupt_handlers();
  LogFormat format = log_format == "json" ? LogFormat::Json : LogFormat::Human;
  Verbosity verbosity = quiet ? Verbosity::Quiet : verbose ? Verbosity::Verbose : Verbosity::Normal;
  return run_to_verdict(*workflow, EngineOptions{output_dir, resume_dir, slots, runner}, format, verbosity,
                        verdict_output(quiet, json));
}

}  // namespace diagnose
