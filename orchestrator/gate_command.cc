#include "orchestrator/gate_command.h"

#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "orchestrator/baseline.h"
#include "orchestrator/engine.h"
#include "orchestrator/history.h"
#include "orchestrator/interrupt.h"
#include "orchestrator/progress.h"
#include "orchestrator/report_json.h"
#include "orchestrator/reports.h"
#include "orchestrator/step.h"
#include "orchestrator/verdict.h"
#include "orchestrator/workflow_loader.h"

namespace diagnose {

namespace fs = boost::filesystem;
using nlohmann::json;

namespace {

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
}

}  // namespace

int gate_command(int argc, char** argv) {
  CLI::App app{"Run a gate workflow: the model version under test against a stored baseline.", "diagnose gate"};
  std::string workflow_path, baseline, model_version, junit, output_dir, log_format = "human";
  int slots = 0;
  bool quiet = false;
  app.add_option("workflow", workflow_path, "workflow with a gate step (e.g. workflows/ci-gate.yaml)")->required();
  app.add_option("--baseline", baseline, "baseline directory (diagnose baseline save)")->required();
  app.add_option("--model-version", model_version, "version under test, recorded in the history (default: $DIAGNOSE_MODEL_VERSION)");
  app.add_option("--junit", junit, "also write the gate's JUnit (one test case per output) here");
  app.add_option("--output-dir", output_dir, "where to create the run directory (default: defaults.output_dir)");
  app.add_option("--slots", slots, "model runs at the same time")->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", quiet, "print only the verdict");
  app.add_option("--log-format", log_format, "progress as human text or JSON lines")->check(CLI::IsMember({"human", "json"}));
  if (int code = parse(app, argc, argv); code >= 0) return code;

  Diagnostics diagnostics(workflow_path);
  std::optional<Workflow> workflow = load_workflow(workflow_path, diagnostics);
  diagnostics.print(std::cerr);
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
  Progress progress(format == LogFormat::Json ? std::cout : std::cerr, quiet ? Verbosity::Quiet : Verbosity::Normal, format);
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
  Verdict verdict = compute_verdict(*workflow, outcome.state);
  std::vector<std::string> reports;
  try {
    reports = write_reports(outcome.state, verdict, workflow->report.formats);
  } catch (const std::exception& e) {
    progress.warning(std::string("cannot write the reports: ") + e.what());
  }
  try {
    record_run_history(outcome.state, verdict);
  } catch (const std::exception& e) {
    progress.warning(e.what());
  }
  if (outcome.interrupted) return kExitInterrupted;

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
    if (quiet) std::cout << "verdict: " << verdict.summary << "\n";
    else print_terminal_summary(std::cout, outcome.state, verdict, reports);
    std::cout << "gate: " << (exit_code == 0 ? "PASSED" : exit_code == 1 ? "FAILED (regression)" : "ERROR") << "\n";
  }
  return exit_code;
}

int baseline_command(int argc, char** argv) {
  CLI::App app{"Record and inspect CI gate baselines.", "diagnose baseline"};
  app.require_subcommand(1);
  BaselineSource source;
  std::string to, dir;
  bool force = false;
  CLI::App* save = app.add_subcommand("save", "record a baseline from a run directory, a plugin run or a dump");
  save->add_option("source", source.path, "run directory (runs/...), plugin run directory or diagnose dump")->required();
  save->add_option("--to", to, "baseline directory to create")->required();
  save->add_option("--run", source.run, "in a run directory: the run to take, STEP or STEP/RUN (default: the first with outputs)");
  save->add_option("--model-version", source.model_version, "version recorded with the baseline (default: the run's)");
  save->add_flag("--force", force, "replace an existing baseline");
  CLI::App* show = app.add_subcommand("show", "verify a baseline and print its metadata");
  show->add_option("dir", dir, "baseline directory")->required();
  if (int code = parse(app, argc, argv); code >= 0) return code;
  try {
    if (*save) {
      Baseline b = save_baseline(source, to, force);
      std::cout << "baseline saved: " << b.dir << " (model version " << b.metadata.value("model_version", "") << ", "
                << b.metadata["files"].size() << " files, from " << b.metadata.value("source", "") << ")\n";
    } else {
      Baseline b = load_baseline(dir);
      json shown = b.metadata;
      shown.erase("files");
      std::cout << shown.dump(2) << "\n" << b.metadata["files"].size() << " files verified\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "diagnose baseline: " << e.what() << "\n";
    return kExitUsage;
  }
  return 0;
}

namespace {

std::string cell(double v) {
  if (std::isnan(v)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v);
  return buffer;
}

std::string date(double seconds) {
  nlohmann::json t = iso_time(seconds);
  return t.is_string() ? t.get<std::string>() : "-";
}

}  // namespace

int history_command(int argc, char** argv) {
  CLI::App app{"List recorded runs, or how an output's metrics moved across model versions.", "diagnose history"};
  std::string db = history_path("runs"), output, workflow;
  int limit = 50;
  bool as_json = false;
  app.add_option("--db", db, "history database (default: runs/history.sqlite)");
  app.add_option("--output", output, "show the trend of this output (as the gate names it, e.g. output.0)");
  app.add_option("--workflow", workflow, "only runs of this workflow");
  app.add_option("--limit", limit, "most runs listed (newest first)")->check(CLI::PositiveNumber);
  app.add_flag("--json", as_json, "print JSON");
  if (int code = parse(app, argc, argv); code >= 0) return code;
  if (!fs::exists(db)) {
    std::cerr << "diagnose history: no history database at " << db << " (runs record one in their output directory; pass --db)\n";
    return kExitUsage;
  }
  try {
    History history(db);
    if (!output.empty()) {
      std::vector<TrendPoint> points = history.trend(output, workflow);
      if (points.empty()) {
        std::cerr << "diagnose history: no metrics recorded for output '" << output << "'";
        std::vector<std::string> names = history.output_names();
        if (!names.empty()) {
          std::cerr << "; recorded outputs:";
          for (const std::string& n : names) std::cerr << " " << n;
        }
        std::cerr << "\n";
        return kExitUsage;
      }
      if (as_json) {
        std::cout << trend_json(points, output, db).dump(2) << "\n";
        return 0;
      }
      std::cout << "trend of " << output << " (" << db << "), oldest first:\n";
      std::printf("%-20s %-20s %-6s %-14s %-14s %-14s %-14s\n", "model version", "started", "result", "cosine",
                  "relative L2", "max relative", "change L2");
      double previous = NAN;
      for (const TrendPoint& p : points) {
        std::string change = std::isnan(previous) || std::isnan(p.metrics.relative_l2)
                                 ? "-"
                                 : (p.metrics.relative_l2 >= previous ? "+" : "") + cell(p.metrics.relative_l2 - previous);
        std::printf("%-20s %-20s %-6s %-14s %-14s %-14s %-14s\n", p.model_version.c_str(), date(p.started).c_str(),
                    p.metrics.passed ? "pass" : "FAIL", cell(p.metrics.cosine_similarity).c_str(),
                    cell(p.metrics.relative_l2).c_str(), cell(p.metrics.max_relative_error).c_str(), change.c_str());
        previous = p.metrics.relative_l2;
      }
      return 0;
    }
    std::vector<RunSummary> runs = history.runs(workflow, limit);
    if (as_json) {
      nlohmann::json list = nlohmann::json::array();
      for (const RunSummary& r : runs) {
        nlohmann::json outputs = nlohmann::json::array();
        for (const OutputMetrics& m : r.outputs)
          outputs.push_back({{"step", m.step}, {"output", m.output}, {"dtype", m.dtype}, {"passed", m.passed},
                             {"relative_l2", std::isnan(m.relative_l2) ? nlohmann::json() : nlohmann::json(m.relative_l2)}});
        list.push_back({{"id", r.id}, {"run_dir", r.run_dir}, {"workflow", r.workflow}, {"model_version", r.model_version},
                        {"verdict", r.verdict}, {"summary", r.summary}, {"exit_code", r.exit_code},
                        {"started", date(r.started)}, {"duration_s", r.duration_s}, {"steps", r.steps}, {"outputs", outputs}});
      }
      std::cout << list.dump(2) << "\n";
      return 0;
    }
    std::printf("%-5s %-20s %-16s %-14s %-22s %4s %9s %-9s\n", "id", "started", "workflow", "model version", "verdict",
                "exit", "seconds", "outputs");
    for (const RunSummary& r : runs) {
      size_t failed = 0;
      for (const OutputMetrics& m : r.outputs) failed += !m.passed;
      std::string outputs = r.outputs.empty() ? "-" : std::to_string(r.outputs.size() - failed) + "/" + std::to_string(r.outputs.size()) + " ok";
      std::printf("%-5lld %-20s %-16s %-14s %-22s %4d %9.1f %-9s\n", r.id, date(r.started).c_str(), r.workflow.c_str(),
                  r.model_version.c_str(), r.verdict.c_str(), r.exit_code, r.duration_s, outputs.c_str());
    }
    if (runs.empty()) std::cout << "(no runs recorded)\n";
  } catch (const std::exception& e) {
    std::cerr << "diagnose history: " << e.what() << "\n";
    return kExitUsage;
  }
  return 0;
}

}  // namespace diagnose
