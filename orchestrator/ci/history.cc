#include "orchestrator/ci/history.h"

#include "compare/json_number.h"

#include <sqlite3.h>
#include <unistd.h>
#include <algorithm>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

constexpr int kSchemaVersion = 1;
constexpr int kBusyTimeoutMs = 30000;

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  run_dir TEXT NOT NULL, workflow TEXT NOT NULL, workflow_path TEXT NOT NULL, model_version TEXT NOT NULL,
  verdict TEXT NOT NULL, summary TEXT NOT NULL, exit_code INTEGER NOT NULL,
  started REAL NOT NULL, duration_s REAL NOT NULL, steps TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS output_metrics(
  run_id INTEGER NOT NULL REFERENCES runs(id), step TEXT NOT NULL, output TEXT NOT NULL, dtype TEXT NOT NULL,
  cosine_similarity REAL, relative_l2 REAL, max_relative_error REAL, max_absolute_error REAL, passed INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS output_metrics_by_output ON output_metrics(output);
CREATE INDEX IF NOT EXISTS runs_by_workflow ON runs(workflow, started);
)sql";

// An error SQLite reported, with its result code (busy/locked ones are retried at open).
struct SqliteError : std::runtime_error {
  SqliteError(sqlite3* db, int code) : std::runtime_error(sqlite3_errmsg(db)), code(code) {}
  bool busy() const { return (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED; }
  int code;
};

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) {
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &statement_, nullptr);
    if (rc != SQLITE_OK) {
      SqliteError error(db, rc);
      sqlite3_finalize(statement_);
      throw error;
    }
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(statement_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double v) {
    if (std::isnan(v))
      sqlite3_bind_null(statement_, i);
    else
      sqlite3_bind_double(statement_, i, v);
    return *this;
  }
  Statement& bind(int i, long long v) {
    sqlite3_bind_int64(statement_, i, v);
    return *this;
  }
  // True while there is a row; throws with the database's message on an error.
  bool step() {
    int rc = sqlite3_step(statement_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw SqliteError(sqlite3_db_handle(statement_), rc);
  }
  std::string text(int column) const {
    const unsigned char* v = sqlite3_column_text(statement_, column);
    return v ? reinterpret_cast<const char*>(v) : "";
  }
  double real(int column) const {
    return sqlite3_column_type(statement_, column) == SQLITE_NULL ? NAN : sqlite3_column_double(statement_, column);
  }
  long long integer(int column) const { return sqlite3_column_int64(statement_, column); }

 private:
  sqlite3_stmt* statement_ = nullptr;
};

double metric(const json& object, const char* key) {
  if (!object.contains(key)) return NAN;
  return compare::number_from_json(object[key]);
}

OutputMetrics output_from_row(const Statement& s, int first) {
  OutputMetrics m;
  m.step = s.text(first);
  m.output = s.text(first + 1);
  m.dtype = s.text(first + 2);
  m.cosine_similarity = s.real(first + 3);
  m.relative_l2 = s.real(first + 4);
  m.max_relative_error = s.real(first + 5);
  m.max_absolute_error = s.real(first + 6);
  m.passed = s.integer(first + 7) != 0;
  return m;
}

}  // namespace

RunSummary summarize_run(const State& state, const Verdict& verdict) {
  RunSummary run;
  run.run_dir = state.run_dir;
  run.workflow = state.workflow_name;
  run.workflow_path = state.workflow_path;
  run.verdict = verdict.category;
  run.summary = verdict.summary;
  run.exit_code = verdict.exit_code;
  run.started = state.started;
  run.duration_s = state.finished > state.started ? state.finished - state.started : 0;
  for (const StepResult& s : state.steps) {
    run.steps.push_back(
        {{"id", s.id}, {"kind", s.kind}, {"status", step_status_name(s.status)}, {"summary", s.summary}});
    if (run.model_version.empty() && s.metrics.contains("model_version") && s.metrics["model_version"].is_string())
      run.model_version = s.metrics["model_version"].get<std::string>();
    if (!s.metrics.contains("outputs") || !s.metrics["outputs"].is_array()) continue;
    for (const json& o : s.metrics["outputs"]) {
      if (!o.is_object() || !o.contains("output") || !o["output"].is_string()) continue;
      OutputMetrics m;
      m.step = s.id;
      m.output = o["output"].get<std::string>();
      m.dtype = o.value("dtype", std::string());
      m.cosine_similarity = metric(o, "cosine_similarity");
      m.relative_l2 = metric(o, "relative_l2");
      m.max_relative_error = metric(o, "max_relative_error");
      m.max_absolute_error = metric(o, "max_absolute_error");
      m.passed = o.value("passed", true);
      run.outputs.push_back(m);
    }
  }
  if (run.model_version.empty()) {
    const char* env = std::getenv("DIAGNOSE_MODEL_VERSION");
    run.model_version = env && *env ? env : "unknown";
  }
  return run;
}

History::History(const std::string& path) : path_(path) {
  boost::system::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    fail("cannot open");
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  // Two processes creating the same new database can deadlock while one switches it to WAL;
  // SQLite then answers SQLITE_BUSY at once instead of waiting, so the setup is retried.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  std::minstd_rand jitter(static_cast<unsigned>(::getpid()));
  for (;;) {
    try {
      set_up_schema();
      return;
    } catch (const std::exception& e) {
      auto* sqlite = dynamic_cast<const SqliteError*>(&e);
      if (sqlite && sqlite->busy() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + jitter() % 45));
        continue;
      }
      std::string what = e.what();
      sqlite3_close(db_);
      db_ = nullptr;
      throw std::runtime_error(
          "history database " + path + ": " + what +
          (what.find("not a database") != std::string::npos || what.find("malformed") != std::string::npos
               ? " (the file is damaged or not a diagnose history: move it away, or pass another --db)"
               : ""));
    }
  }
}

void History::set_up_schema() {
  // The first statement that reads the file tells a database from anything else.
  {
    Statement version(db_, "PRAGMA user_version");
    version.step();
  }
  execute("PRAGMA journal_mode=WAL");
  execute("PRAGMA synchronous=NORMAL");
  execute("BEGIN IMMEDIATE");
  try {
    execute(kSchema);
    Statement read(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
    if (read.step()) {
      int found = std::atoi(read.text(0).c_str());
      if (found != kSchemaVersion)
        throw std::runtime_error("schema version " + read.text(0) + ", this diagnose reads version " +
                                 std::to_string(kSchemaVersion));
    } else {
      Statement write(db_, "INSERT INTO meta(key, value) VALUES ('schema_version', ?)");
      write.bind(1, std::to_string(kSchemaVersion)).step();
    }
    execute("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

History::~History() { sqlite3_close(db_); }

void History::execute(const std::string& sql) const {
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw SqliteError(db_, rc);
}

void History::fail(const std::string& what) const {
  std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
  throw std::runtime_error("history database " + path_ + ": " + what + ": " + message);
}

long long History::record(const RunSummary& run) {
  try {
    execute("BEGIN IMMEDIATE");
    try {
      Statement insert(db_,
                       "INSERT INTO runs(run_dir, workflow, workflow_path, model_version, verdict, summary, exit_code, "
                       "started, duration_s, steps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      insert.bind(1, run.run_dir).bind(2, run.workflow).bind(3, run.workflow_path).bind(4, run.model_version);
      insert.bind(5, run.verdict).bind(6, run.summary).bind(7, static_cast<long long>(run.exit_code));
      insert.bind(8, run.started).bind(9, run.duration_s).bind(10, run.steps.dump()).step();
      long long id = sqlite3_last_insert_rowid(db_);
      for (const OutputMetrics& m : run.outputs) {
        Statement output(db_,
                         "INSERT INTO output_metrics(run_id, step, output, dtype, cosine_similarity, relative_l2, "
                         "max_relative_error, max_absolute_error, passed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        output.bind(1, id).bind(2, m.step).bind(3, m.output).bind(4, m.dtype).bind(5, m.cosine_similarity);
        output.bind(6, m.relative_l2).bind(7, m.max_relative_error).bind(8, m.max_absolute_error);
        output.bind(9, static_cast<long long>(m.passed)).step();
      }
      execute("COMMIT");
      return id;
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("history database " + path_ + ": cannot record the run: " + e.what());
  }
}

std::vector<RunSummary> History::runs(const std::string& workflow, int limit) const {
  std::vector<RunSummary> list;
  try {
    Statement s(db_,
                "SELECT id, run_dir, workflow, workflow_path, model_version, verdict, summary, exit_code, started, "
                "duration_s, steps FROM runs WHERE ?1 = '' OR workflow = ?1 ORDER BY started DESC, id DESC LIMIT ?2");
    s.bind(1, workflow).bind(2, static_cast<long long>(limit));
    while (s.step()) {
      RunSummary r;
      r.id = s.integer(0);
      r.run_dir = s.text(1);
      r.workflow = s.text(2);
      r.workflow_path = s.text(3);
      r.model_version = s.text(4);
      r.verdict = s.text(5);
      r.summary = s.text(6);
      r.exit_code = static_cast<int>(s.integer(7));
      r.started = s.real(8);
      r.duration_s = s.real(9);
      r.steps = json::parse(s.text(10), nullptr, false);
      list.push_back(std::move(r));
    }
    for (RunSummary& r : list) {
      Statement o(db_,
                  "SELECT step, output, dtype, cosine_similarity, relative_l2, max_relative_error, max_absolute_error, "
                  "passed FROM output_metrics WHERE run_id = ? ORDER BY rowid");
      o.bind(1, r.id);
      while (o.step()) r.outputs.push_back(output_from_row(o, 0));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("history database " + path_ + ": " + e.what());
  }
  return list;
}

std::vector<TrendPoint> History::trend(const std::string& output, const std::string& workflow) const {
  std::vector<TrendPoint> points;
  try {
    Statement s(db_,
                "SELECT r.id, r.run_dir, r.model_version, r.started, m.step, m.output, m.dtype, m.cosine_similarity, "
                "m.relative_l2, m.max_relative_error, m.max_absolute_error, m.passed FROM output_metrics m JOIN runs r "
                "ON r.id = m.run_id WHERE (?1 = '' OR m.output = ?1) AND (?2 = '' OR r.workflow = ?2) "
                "ORDER BY r.started, r.id, m.rowid");
    s.bind(1, output).bind(2, workflow);
    while (s.step()) {
      TrendPoint p{s.integer(0), s.text(1), s.text(2), s.real(3), output_from_row(s, 4)};
      // One point per run: for "any output", the worst; a failing output counts as worse.
      if (!points.empty() && points.back().run_id == p.run_id) {
        OutputMetrics& kept = points.back().metrics;
        double kept_error = std::isnan(kept.relative_l2) ? -1 : kept.relative_l2;
        double error = std::isnan(p.metrics.relative_l2) ? -1 : p.metrics.relative_l2;
        if ((kept.passed && !p.metrics.passed) || (kept.passed == p.metrics.passed && error > kept_error))
          kept = p.metrics;
        continue;
      }
      points.push_back(std::move(p));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("history database " + path_ + ": " + e.what());
  }
  return points;
}

std::vector<std::string> History::output_names() const {
  std::vector<std::string> names;
  Statement s(db_, "SELECT DISTINCT output FROM output_metrics ORDER BY output");
  while (s.step()) names.push_back(s.text(0));
  return names;
}

std::string history_path(const std::string& output_dir) { return (fs::path(output_dir) / "history.sqlite").string(); }

std::string record_run_history(const State& state, const Verdict& verdict) {
  std::string database = history_path(fs::path(state.run_dir).parent_path().string());
  History(database).record(summarize_run(state, verdict));
  return database;
}

std::string aligned_table(const std::vector<std::vector<std::string>>& rows, const std::set<size_t>& right_aligned) {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string padding(widths[i] - row[i].size(), ' ');
      line += (i ? "  " : "") + (right_aligned.count(i) ? padding + row[i] : row[i] + padding);
    }
    text += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  return text;
}

json trend_json(const std::vector<TrendPoint>& points, const std::string& output, const std::string& database) {
  json list = json::array();
  for (const TrendPoint& p : points)
    list.push_back({{"model_version", p.model_version},
                    {"run", fs::path(p.run_dir).filename().string()},
                    {"run_dir", p.run_dir},
                    {"started", p.started},
                    {"output", p.metrics.output},
                    {"cosine_similarity", compare::json_number_or_null(p.metrics.cosine_similarity)},
                    {"relative_l2", compare::json_number_or_null(p.metrics.relative_l2)},
                    {"max_relative_error", compare::json_number_or_null(p.metrics.max_relative_error)},
                    {"max_absolute_error", compare::json_number_or_null(p.metrics.max_absolute_error)},
                    {"passed", p.metrics.passed}});
  return {{"format", "diagnose-history-trend"},
          {"version", 1},
          {"output", output},
          {"database", database},
          {"points", list}};
}

}  // namespace diagnose
