#include "cli/workflow_session.h"

#include <unistd.h>

#include <iostream>

#include "orchestrator/ci/history.h"
#include "orchestrator/report/report_json.h"
#include "orchestrator/report/reports.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_loader.h"

namespace diagnose {

std::optional<Workflow> load_or_report(const std::string& path) {
  Diagnostics diagnostics(path);
  std::optional<Workflow> workflow = load_workflow(path, diagnostics);
  if (workflow) check_model_paths(*workflow, diagnostics);
  diagnostics.print(std::cerr);
  if (!diagnostics.empty()) workflow.reset();
  return workflow;
}

FinishedRun finish_run(const Workflow& workflow, const EngineOutcome& outcome, Progress& progress) {
  FinishedRun run{run_report(outcome.state, compute_verdict(workflow, outcome.state)), {}};
  try {
    run.reports = write_reports(run.report, workflow.report.formats, outcome.state.run_dir);
  } catch (const std::exception& e) {
    progress.warning(std::string("cannot write the reports: ") + e.what());
  }
  try {
    if (!outcome.interrupted) record_run_history(outcome.state, run.report.verdict);
  } catch (const std::exception& e) {
    progress.warning(e.what());
  }
  return run;
}

VerdictOutput verdict_output(bool quiet, bool json) {
  return json ? VerdictOutput::Json : quiet ? VerdictOutput::Block : VerdictOutput::Summary;
}

void print_verdict(const FinishedRun& run, VerdictOutput output) {
  if (output == VerdictOutput::Json)
    std::cout << verdict_json(run.report.verdict).dump(2) << "\n";
  else
    print_terminal_summary(std::cout, run.report, run.reports, terminal_style(STDOUT_FILENO),
                           output == VerdictOutput::Summary);
}

int run_to_verdict(const Workflow& workflow, const EngineOptions& options, LogFormat format, Verbosity verbosity,
                   VerdictOutput output) {
  EngineOutcome outcome;
  Progress progress(format == LogFormat::Json ? std::cout : std::cerr, verbosity, format);
  if (format == LogFormat::Human && isatty(STDERR_FILENO)) progress.live_status(terminal_style(STDERR_FILENO).width);
  try {
    outcome = run_workflow(workflow, options, progress);
  } catch (const std::exception& e) {
    std::cerr << "diagnose: " << e.what() << "\n";
    return options.resume_dir.empty() ? kExitInfrastructure : kExitUsage;
  }
  FinishedRun run = finish_run(workflow, outcome, progress);
  if (outcome.interrupted) return kExitInterrupted;
  const Verdict& verdict = run.report.verdict;
  progress.verdict(verdict.category, verdict.summary, verdict.exit_code);
  if (format == LogFormat::Human || output == VerdictOutput::Json) print_verdict(run, output);
  return verdict.exit_code;
}

}  // namespace diagnose
