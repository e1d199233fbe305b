// The history of runs: a SQLite database (history.sqlite in the output directory, next to the
// run directories) with every run's summary and per-output metrics, for `diagnose history`
// and the trend in a gate run's report.
//
// Several diagnose processes may write to one database at once (parallel CI jobs on a shared
// output directory): WAL journal, a busy timeout, and every write in one IMMEDIATE
// transaction, so a reader sees whole runs only.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"

struct sqlite3;

namespace diagnose {

// One output (or chosen layer) of a run compared with its reference, as the gate step
// exposes it in metrics["outputs"].
struct OutputMetrics {
  std::string step, output, dtype;
  double cosine_similarity = NAN, relative_l2 = NAN, max_relative_error = NAN, max_absolute_error = NAN;
  bool passed = true;
};

struct RunSummary {
  long long id = 0;
  std::string run_dir, workflow, workflow_path, model_version;
  std::string verdict, summary;  // verdict category and sentence
  int exit_code = 0;
  double started = 0, duration_s = 0;
  nlohmann::json steps = nlohmann::json::array();  // [{id, kind, status, summary}]
  std::vector<OutputMetrics> outputs;
};

// The summary of a finished run, from its state and verdict. The model version is the first
// step metric "model_version", else $DIAGNOSE_MODEL_VERSION, else "unknown".
RunSummary summarize_run(const State& state, const Verdict& verdict);

struct TrendPoint {
  long long run_id = 0;
  std::string run_dir, model_version;
  double started = 0;
  OutputMetrics metrics;
};

class History {
 public:
  // Opens (creating when absent) the database. Throws std::runtime_error naming the path and
  // what is wrong (not a SQLite database, a newer schema, locked for too long...).
  explicit History(const std::string& path);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  long long record(const RunSummary& run);
  // Newest first; workflow empty: all workflows.
  std::vector<RunSummary> runs(const std::string& workflow = "", int limit = 50) const;
  // How `output` moved, oldest first: per run of `workflow` (empty: any), the output's metrics.
  // An empty `output` takes the worst output (largest relative L2 error) of each run.
  std::vector<TrendPoint> trend(const std::string& output, const std::string& workflow = "") const;
  // Outputs ever recorded, for "did you mean".
  std::vector<std::string> output_names() const;

  const std::string& path() const { return path_; }

 private:
  void set_up_schema();
  void execute(const std::string& sql) const;
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  sqlite3* db_ = nullptr;
};

// Default database of an output directory.
std::string history_path(const std::string& output_dir);
// Records a finished run in the database of its output directory (the run directory's
// parent); returns the database's path. Throws std::runtime_error.
std::string record_run_history(const State& state, const Verdict& verdict);

// Rows of cells, the header first, as lines of text: each column as wide as its widest cell,
// two spaces apart; the columns in `right_aligned` (numbers) padded on the left.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows, const std::set<size_t>& right_aligned);

// A trend as the JSON document report.html draws ("format": "diagnose-history-trend").
nlohmann::json trend_json(const std::vector<TrendPoint>& points, const std::string& output,
                          const std::string& database);

}  // namespace diagnose
