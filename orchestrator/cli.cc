#include "orchestrator/cli.h"

#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <iostream>

#include "orchestrator/engine.h"
#include "orchestrator/history.h"
#include "orchestrator/interrupt.h"
#include "orchestrator/progress.h"
#include "orchestrator/reports.h"
#include "orchestrator/run_dir.h"
#include "orchestrator/step.h"
#include "orchestrator/verdict.h"
#include "orchestrator/workflow_loader.h"
#include "orchestrator/workflow_schema.h"

namespace diagnose {

namespace fs = boost::filesystem;

namespace {

// Parses with CLI11; returns -1 to go on, or the exit code (help: 0, usage error: 2).
int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
}

std::optional<Workflow> load_or_report(const std::string& path) {
  Diagnostics diagnostics(path);
  std::optional<Workflow> workflow = load_workflow(path, diagnostics);
  diagnostics.print(std::cerr);
  return workflow;
}

}  // namespace

int run_command(int argc, char** argv) {
  CLI::App app{"Run a diagnostic workflow and print its verdict.", "diagnose"};
  std::string workflow_path, resume_dir, output_dir, log_format = "human";
  int slots = 0;
  RunnerOverride runner;
  bool quiet = false, verbose = false;
  app.add_option("workflow", workflow_path, "workflow file (YAML)")->required();
  app.add_option("--resume", resume_dir, "continue this run directory, re-running only what did not complete");
  app.add_option("--output-dir", output_dir, "where to create the run directory (default: defaults.output_dir)");
  app.add_option("--slots", slots, "model runs at the same time (default: defaults.slots)")->check(CLI::PositiveNumber);
  app.add_option("--runner", runner.kind, "run the models here (local) or as Slurm jobs (slurm), whatever the workflow says")
      ->check(CLI::IsMember({"local", "slurm"}));
  app.add_option("--partition", runner.partition, "Slurm partition for every step");
  auto* quiet_flag = app.add_flag("-q,--quiet", quiet, "print only the verdict");
  app.add_flag("-v,--verbose", verbose, "also print the runs' output as it appears")->excludes(quiet_flag);
  app.add_option("--log-format", log_format, "progress as human text or JSON lines")
      ->check(CLI::IsMember({"human", "json"}));
  if (int code = parse(app, argc, argv); code >= 0) return code;

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
  EngineOutcome outcome;
  {
    Progress progress(format == LogFormat::Json ? std::cout : std::cerr, verbosity, format);
    try {
      outcome = run_workflow(*workflow, EngineOptions{output_dir, resume_dir, slots, runner}, progress);
    } catch (const std::exception& e) {
      std::cerr << "diagnose: " << e.what() << "\n";
      return resume_dir.empty() ? kExitInfrastructure : kExitUsage;
    }
    Verdict verdict = compute_verdict(*workflow, outcome.state);
    std::vector<std::string> reports;
    try {
      reports = write_reports(outcome.state, verdict, workflow->report.formats);
    } catch (const std::exception& e) {
      progress.warning(std::string("cannot write the reports: ") + e.what());
    }
    try {
      if (!outcome.interrupted) record_run_history(outcome.state, verdict);
    } catch (const std::exception& e) {
      progress.warning(e.what());
    }
    if (outcome.interrupted) return kExitInterrupted;
    progress.verdict(verdict.category, verdict.summary, verdict.exit_code);
    if (format == LogFormat::Human) {
      if (quiet) std::cout << "verdict: " << verdict.summary << "\n";
      else print_terminal_summary(std::cout, outcome.state, verdict, reports);
    }
    return verdict.exit_code;
  }
}

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
  if (int code = parse(app, argc, argv); code >= 0) return code;
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

int schema_command(int argc, char** argv) {
  CLI::App app{"Print the JSON Schema of the workflow format.", "diagnose schema"};
  if (int code = parse(app, argc, argv); code >= 0) return code;
  std::cout << workflow_json_schema().dump(2) << "\n";
  return 0;
}

int report_command(int argc, char** argv) {
  CLI::App app{"Render the reports of a run directory again and print its verdict.", "diagnose report"};
  std::string run_dir;
  bool quiet = false;
  app.add_option("run_dir", run_dir, "run directory (runs/<time>-<name>)")->required();
  app.add_flag("-q,--quiet", quiet, "print only the verdict");
  if (int code = parse(app, argc, argv); code >= 0) return code;

  State state;
  try {
    state = load_state(state_path(run_dir));
  } catch (const std::exception& e) {
    std::cerr << "diagnose: " << e.what() << "\n";
    return kExitUsage;
  }
  state.run_dir = absolute_path(run_dir, fs::current_path().string());
  // The verdict settings and report formats come from the run's own copy of the workflow.
  Diagnostics diagnostics(workflow_copy_path(run_dir));
  std::optional<Workflow> workflow = load_workflow(workflow_copy_path(run_dir), diagnostics);
  Verdict verdict = workflow ? compute_verdict(*workflow, state) : compute_verdict({}, {}, state);
  std::vector<std::string> formats = workflow ? workflow->report.formats : ReportSpec{}.formats;
  std::vector<std::string> reports;
  try {
    reports = write_reports(state, verdict, formats);
  } catch (const std::exception& e) {
    std::cerr << "diagnose: cannot write the reports: " << e.what() << "\n";
    return kExitInfrastructure;
  }
  if (quiet) std::cout << "verdict: " << verdict.summary << "\n";
  else print_terminal_summary(std::cout, state, verdict, reports);
  return verdict.exit_code;
}

}  // namespace diagnose
