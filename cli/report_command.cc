#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/engine/verdict.h"
#include "orchestrator/report/reports.h"
#include "orchestrator/workflow/workflow_loader.h"

namespace diagnose {

namespace fs = boost::filesystem;

int report_command(int argc, char** argv) {
  CLI::App app{"Render the reports of a run directory again and print its verdict.", "diagnose report"};
  std::string run_dir;
  bool quiet = false;
  app.add_option("run_dir", run_dir, "run directory (runs/<time>-<name>)")->required();
  app.add_flag("-q,--quiet", quiet, "print only the verdict");
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;

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
  if (quiet)
    std::cout << "verdict: " << verdict.summary << "\n";
  else
    print_terminal_summary(std::cout, state, verdict, reports);
  return verdict.exit_code;
}

}  // namespace diagnose
