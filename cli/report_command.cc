#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/filesystem.hpp>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/workflow_session.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/engine/verdict.h"
#include "orchestrator/report/reports.h"
#include "orchestrator/report/run_report.h"
#include "orchestrator/util/files.h"
#include "orchestrator/workflow/workflow_loader.h"

namespace diagnose {

namespace fs = boost::filesystem;

namespace {

// A report.json written before its steps carried their sections lacks what report.html draws.
bool has_sections(const nlohmann::json& report) {
  const nlohmann::json steps = report.is_object() ? report.value("steps", nlohmann::json()) : nlohmann::json();
  return steps.is_array() && std::all_of(steps.begin(), steps.end(), [](const nlohmann::json& step) {
           return step.is_object() && step.contains("sections");
         });
}

// From report.json alone where the run wrote one; else (a workflow without the json format, a
// report.json of an older diagnose) from state.json, the step directories and the verdict
// settings of the run's workflow.
RunReport load_report(const std::string& dir, const std::optional<Workflow>& workflow) {
  if (std::optional<std::string> text = read_file(dir + "/report.json")) {
    nlohmann::json report = nlohmann::json::parse(*text, nullptr, false);
    if (has_sections(report) || !fs::exists(state_path(dir))) return run_report_from_json(report);
  }
  State state = load_state(state_path(dir));
  state.run_dir = dir;
  return run_report(state, workflow ? compute_verdict(*workflow, state) : compute_verdict({}, {}, state));
}

}  // namespace

int report_command(int argc, char** argv) {
  CLI::App app{"Render the reports of a run directory again and print its verdict.", "diagnose report"};
  std::string run_dir;
  bool quiet = false, json = false;
  app.add_option("run_dir", run_dir, "run directory (runs/<time>-<name>)")->required();
  app.add_flag("-q,--quiet", quiet, "print only the verdict");
  app.add_flag("--json", json, "print the verdict as report.json's verdict object");
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;

  std::string dir = absolute_path(run_dir, fs::current_path().string());
  // The report formats come from the run's own copy of the workflow.
  Diagnostics diagnostics(workflow_copy_path(dir));
  std::optional<Workflow> workflow = load_workflow(workflow_copy_path(dir), diagnostics);
  std::vector<std::string> formats = workflow ? workflow->report.formats : ReportSpec{}.formats;
  RunReport report;
  try {
    report = load_report(dir, workflow);
  } catch (const std::exception& e) {
    std::cerr << "diagnose: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<std::string> reports;
  try {
    reports = write_reports(report, formats, dir);
  } catch (const std::exception& e) {
    std::cerr << "diagnose: cannot write the reports: " << e.what() << "\n";
    return kExitInfrastructure;
  }
  const int exit_code = report.verdict.exit_code;
  print_verdict(FinishedRun{std::move(report), std::move(reports)}, verdict_output(quiet, json));
  return exit_code;
}

}  // namespace diagnose
