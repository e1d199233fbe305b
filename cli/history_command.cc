#include <CLI/CLI.hpp>
#include <boost/filesystem.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "orchestrator/ci/history.h"
#include "orchestrator/engine/verdict.h"
#include "orchestrator/report/report_json.h"

namespace diagnose {

namespace fs = boost::filesystem;

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
  if (int code = parse_arguments(app, argc, argv); code != kArgumentsParsed) return code;
  if (!fs::exists(db)) {
    std::cerr << "diagnose history: no history database at " << db
              << " (runs record one in their output directory; pass --db)\n";
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
      std::vector<std::vector<std::string>> rows = {
          {"model version", "started", "result", "cosine", "relative L2", "max relative", "change L2"}};
      double previous = NAN;
      for (const TrendPoint& p : points) {
        std::string change =
            std::isnan(previous) || std::isnan(p.metrics.relative_l2)
                ? "-"
                : (p.metrics.relative_l2 >= previous ? "+" : "") + cell(p.metrics.relative_l2 - previous);
        rows.push_back({p.model_version, date(p.started), p.metrics.passed ? "pass" : "FAIL",
                        cell(p.metrics.cosine_similarity), cell(p.metrics.relative_l2),
                        cell(p.metrics.max_relative_error), change});
        previous = p.metrics.relative_l2;
      }
      std::cout << aligned_table(rows, {});
      return 0;
    }
    std::vector<RunSummary> runs = history.runs(workflow, limit);
    if (as_json) {
      nlohmann::json list = nlohmann::json::array();
      for (const RunSummary& r : runs) {
        nlohmann::json outputs = nlohmann::json::array();
        for (const OutputMetrics& m : r.outputs)
          outputs.push_back(
              {{"step", m.step},
               {"output", m.output},
               {"dtype", m.dtype},
               {"passed", m.passed},
               {"relative_l2", std::isnan(m.relative_l2) ? nlohmann::json() : nlohmann::json(m.relative_l2)}});
        list.push_back({{"id", r.id},
                        {"run_dir", r.run_dir},
                        {"workflow", r.workflow},
                        {"model_version", r.model_version},
                        {"verdict", r.verdict},
                        {"summary", r.summary},
                        {"exit_code", r.exit_code},
                        {"started", date(r.started)},
                        {"duration_s", r.duration_s},
                        {"steps", r.steps},
                        {"outputs", outputs}});
      }
      std::cout << list.dump(2) << "\n";
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {
        {"id", "started", "workflow", "model version", "verdict", "exit", "seconds", "outputs"}};
    for (const RunSummary& r : runs) {
      size_t failed = 0;
      for (const OutputMetrics& m : r.outputs) failed += !m.passed;
      std::string outputs = r.outputs.empty() ? "-"
                                              : std::to_string(r.outputs.size() - failed) + "/" +
                                                    std::to_string(r.outputs.size()) + " ok";
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f", r.duration_s);
      rows.push_back({std::to_string(r.id), date(r.started), r.workflow, r.model_version, r.verdict,
                      std::to_string(r.exit_code), seconds, outputs});
    }
    std::cout << aligned_table(rows, {0, 5, 6});
    if (runs.empty()) std::cout << "(no runs recorded)\n";
  } catch (const std::exception& e) {
    std::cerr << "diagnose history: " << e.what() << "\n";
    return kExitUsage;
  }
  return 0;
}

}  // namespace diagnose
