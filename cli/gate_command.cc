#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <cstdlib>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "cli/workflow_session.h"
#include "orchestrator/exec/interrupt.h"

namespace diagnose {

namespace fs = boost::filesystem;

int gate_command(int argc, char** argv) {
  CLI::App app{"Run a gate workflow: the model version under test against a stored baseline.", "diagnose gate"};
  std::string workflow_path, baseline, model_version, junit, output_dir, log_format = "human";
  int slots = 0;
  bool quiet = false;
  app.add_option("workflow", workflow_path, "workflow with a gate step (e.g. workflows/ci-gate.yaml)")->required();
  app.add_option("--baseline", baseline, "baseline directory (diagnose baseline save)")->required();
  app.add_option("--model-version", model_version,
                 "version under test, recorded in the history (default: $DIAGNOSE_MODEL_VERSION)");
  app.add_option("--junit", junit, "also write the gate's JUnit (one test case per output) here");
  app.add_option("--output-dir", output_dir, "where to create the run directory (default: defaults.output_dir)");
  app.add_option("--slots", slots, "model runs at the same time")->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", quiet, "print only the verdict");
  app.add_option("--log-format", log_format, "progress as human text or JSON lines")
      ->check(CLI::IsMember({"human", "json"}));
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;

  std::optional<Workflow> workflow = load_or_report(workflow_path);
  if (!workflow) return kExitUsage;
  std::vector<std::string> gates;
  for (const StepSpec& s : workflow->steps)
    if (s.kind == "gate") gates.push_back(s.id);
  if (gates.empty()) {
    std::cerr << "diagnose gate: " << workflow_path << " has no step of kind gate\n";
    return kExitUsage;
  }
  // The gate step reads these through its defaults (${env.DIAGNOSE_BASELINE}...).
  setenv("DIAGNOSE_BASELINE", fs::absolute(baseline).lexically_normal().string().c_str(), 1);
  if (!model_version.empty()) setenv("DIAGNOSE_MODEL_VERSION", model_version.c_str(), 1);

  install_interrupt_handlers();
  LogFormat format = log_format == "json" ? LogFormat::Json : LogFormat::Human;
  Progress progress(format == LogFormat::Json ? std::cout : std::cerr, quiet ? Verbosity::Quiet : Verbosity::Normal,
                    format);
  EngineOutcome outcome;
  try {
    EngineOptions options;
    options.output_dir = output_dir;
    options.slots = slots;
    outcome = run_workflow(*workflow, options, progress);
  } catch (const std::exception& e) {
    std::cerr << "diagnose gate: " << e.what() << "\n";
    return kExitInfrastructure;
  }
  FinishedRun run = finish_run(*workflow, outcome, progress);
  if (outcome.interrupted) return kExitInterrupted;

  const Verdict& verdict = run.report.verdict;
  int exit_code = verdict.exit_code;
  std::string gate_junit;
  for (const std::string& id : gates) {
    const StepResult* step = outcome.state.find(id);
    if (!step) continue;
    if (step->metrics.contains("baseline_problem")) exit_code = kExitUsage;
    std::string path = outcome.run_dir + "/steps/" + id + "/gate/junit.xml";
    if (gate_junit.empty() && step->status != StepStatus::Error && fs::exists(path)) gate_junit = path;
  }
  if (!junit.empty()) {
    // A gate that could not judge has no per-output JUnit: the run's own (one case per step) says why.
    std::string source = gate_junit.empty() ? outcome.run_dir + "/junit.xml" : gate_junit;
    boost::system::error_code ec;
    if (fs::path(junit).has_parent_path()) fs::create_directories(fs::path(junit).parent_path(), ec);
    fs::copy_file(source, junit, fs::copy_options::overwrite_existing, ec);
    if (ec) progress.warning("cannot write " + junit + ": " + ec.message());
  }
  progress.verdict(verdict.category, verdict.summary, exit_code);
  if (format == LogFormat::Human) {
    print_verdict(run, verdict_output(quiet, false));
    std::cout << "gate: " << (exit_code == 0 ? "PASSED" : exit_code == 1 ? "FAILED (regression)" : "ERROR") << "\n";
  }
  return exit_code;
}

}  // namespace diagnose
