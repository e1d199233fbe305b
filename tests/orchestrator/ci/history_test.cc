// The run history in SQLite: what it records, the trend it gives, parallel writer processes,
// and damaged files.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sstream>

#include "orchestrator/ci/history.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

RunSummary run_of(const std::string& version, double started, double error, bool passed) {
  RunSummary r;
  r.run_dir = "/runs/" + version;
  r.workflow = "ci-gate";
  r.workflow_path = "workflows/ci-gate.yaml";
  r.model_version = version;
  r.verdict = passed ? "no_precision_problem" : "precision_problem";
  r.summary = passed ? "all good" : "output.0 regressed";
  r.exit_code = passed ? 0 : 1;
  r.started = started;
  r.duration_s = 2.5;
  r.steps = {{{"id", "gate"}, {"kind", "gate"}, {"status", passed ? "pass" : "fail"}, {"summary", r.summary}}};
  OutputMetrics a;
  a.step = "gate";
  a.output = "output.0";
  a.dtype = "torch.float32";
  a.cosine_similarity = 1 - error;
  a.relative_l2 = error;
  a.max_relative_error = error * 3;
  a.max_absolute_error = error * 2;
  a.passed = passed;
  OutputMetrics b = a;
  b.output = "output.1";
  b.relative_l2 = error / 10;
  b.passed = true;
  r.outputs = {a, b};
  return r;
}

std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr);
  std::string result =
      sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "no row";
  sqlite3_finalize(s);
  sqlite3_close(db);
  return result;
}

TEST(History, RecordsRunsAndOutputsAndGivesTheTrendOldestFirst) {
  TempDir dir;
  std::string db = history_path(dir.path());
  {
    History h(db);
    h.record(run_of("v1", 100, 1e-7, true));
    h.record(run_of("v3", 300, 0.2, false));
    h.record(run_of("v2", 200, 2e-7, true));
  }
  History h(db);
  std::vector<RunSummary> runs = h.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].model_version, "v3");  // newest first
  EXPECT_EQ(runs[0].verdict, "precision_problem");
  EXPECT_EQ(runs[0].exit_code, 1);
  ASSERT_EQ(runs[0].outputs.size(), 2u);
  EXPECT_FALSE(runs[0].outputs[0].passed);
  EXPECT_EQ(runs[0].steps[0]["id"], "gate");

  std::vector<TrendPoint> trend = h.trend("output.0");
  ASSERT_EQ(trend.size(), 3u);
  EXPECT_EQ(trend[0].model_version, "v1");
  EXPECT_EQ(trend[2].model_version, "v3");
  EXPECT_DOUBLE_EQ(trend[2].metrics.relative_l2, 0.2);
  // Any output: the worst of each run (the failing one when there is one).
  std::vector<TrendPoint> worst = h.trend("", "ci-gate");
  ASSERT_EQ(worst.size(), 3u);
  EXPECT_EQ(worst[2].metrics.output, "output.0");
  EXPECT_TRUE(h.trend("output.0", "other-workflow").empty());
  EXPECT_EQ(h.output_names(), (std::vector<std::string>{"output.0", "output.1"}));

  nlohmann::json doc = trend_json(trend, "output.0", db);
  EXPECT_EQ(doc["format"], "diagnose-history-trend");
  EXPECT_EQ(doc["points"].size(), 3u);
  EXPECT_EQ(doc["points"][2]["passed"], false);
}

TEST(History, TablesAlignEachColumnToItsWidestCell) {
  EXPECT_EQ(aligned_table({{"id", "workflow", "seconds"}, {"7", "a-rather-long-workflow-name", "2.5"}, {"12", "w", ""}},
                          {0, 2}),
            "id  workflow                     seconds\n"
            " 7  a-rather-long-workflow-name      2.5\n"
            "12  w\n");
}

// `diagnose history` lists a run of a long-named workflow with every column under its header.
TEST(History, TheListingAlignsLongNames) {
  TempDir dir;
  std::string db = history_path(dir.path());
  RunSummary long_named = run_of("v1", 100, 1e-7, true);
  long_named.workflow = "graph-mode-precision-of-a-long-model-name";
  long_named.model_version = "2026.12.01-release-candidate";
  {
    History h(db);
    h.record(long_named);
    h.record(run_of("v2", 200, 0.2, false));
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"history", "--db", db}, {"history", "--db", db, "--output", "output.0"}}) {
    Finished listed = run_diagnose(args, dir.path());
    ASSERT_EQ(listed.code, 0) << listed.err;
    std::vector<std::string> lines;
    std::istringstream text(listed.out);
    for (std::string line; std::getline(text, line);) lines.push_back(line);
    ASSERT_GE(lines.size(), 3u) << listed.out;
    if (args.size() > 3) lines.erase(lines.begin());  // "trend of output.0 (...), oldest first:"
    // Where a header starts (two spaces after the previous one), every row has a gap.
    const std::string& header = lines[0];
    for (size_t column = 2; column < header.size(); ++column) {
      if (header[column] == ' ' || header.compare(column - 2, 2, "  ")) continue;
      for (const std::string& row : lines)
        if (column < row.size())
          EXPECT_EQ(row.substr(column - 2, 2), "  ") << "column " << column << "\n" << listed.out;
    }
    EXPECT_NE(listed.out.find(args.size() > 3 ? "2026.12.01-release-candidate" : long_named.workflow),
              std::string::npos);
  }
}

TEST(History, SummaryOfARunTakesTheGateMetrics) {
  State state;
  state.run_dir = "/out/runs/20261129-1-ci";
  state.workflow_name = "ci";
  state.started = 10;
  state.finished = 14;
  StepResult gate;
  gate.id = "gate";
  gate.kind = "gate";
  gate.status = StepStatus::Fail;
  gate.metrics = {{"model_version", "2.1"},
                  {"outputs",
                   {{{"output", "output.0"},
                     {"dtype", "torch.float32"},
                     {"cosine_similarity", 0.9},
                     {"relative_l2", 0.3},
                     {"max_relative_error", "inf"},
                     {"max_absolute_error", nullptr},
                     {"passed", false}}}}};
  state.steps.push_back(gate);
  Verdict verdict;
  verdict.category = "precision_problem";
  verdict.exit_code = 1;
  RunSummary r = summarize_run(state, verdict);
  EXPECT_EQ(r.model_version, "2.1");
  EXPECT_DOUBLE_EQ(r.duration_s, 4);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(std::isinf(r.outputs[0].max_relative_error));
  EXPECT_TRUE(std::isnan(r.outputs[0].max_absolute_error));
  EXPECT_FALSE(r.outputs[0].passed);
}

// Parallel CI jobs sharing one output directory: separate processes, each opening the database
// and recording runs at the same time. Every run must land, whole, in a sound database.
TEST(History, ParallelWriterProcessesLoseNothing) {
  TempDir dir;
  std::string db = history_path(dir.path());
  const int writers = 6, runs_each = 20;
  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        for (int i = 0; i < runs_each; ++i) {
          History h(db);  // a fresh connection each time, as separate diagnose runs do
          h.record(run_of("w" + std::to_string(w) + "-" + std::to_string(i), w * 1000 + i, 1e-6 * (i + 1), i % 5 != 0));
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "writer %d: %s\n", w, e.what());
        code = 1;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  }
  History h(db);
  std::vector<RunSummary> runs = h.runs("", 100000);
  EXPECT_EQ(runs.size(), static_cast<size_t>(writers * runs_each));
  for (const RunSummary& r : runs) EXPECT_EQ(r.outputs.size(), 2u) << r.model_version;
  EXPECT_EQ(h.trend("output.1").size(), static_cast<size_t>(writers * runs_each));
  EXPECT_EQ(integrity(db), "ok");
}

TEST(History, AFileThatIsNotADatabaseIsAClearError) {
  TempDir dir;
  std::string db = dir / "history.sqlite";
  write_text(db, std::string(4096, 'x') + "this is a log file, not SQLite\n");
  try {
    History h(db);
    FAIL() << "opened a text file as a database";
  } catch (const std::runtime_error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(db), std::string::npos) << message;
    EXPECT_NE(message.find("not a database"), std::string::npos) << message;
    EXPECT_NE(message.find("move it away"), std::string::npos) << message;
  }
  // The file is left as it was: nothing is lost.
  EXPECT_NE(read_text(db).find("this is a log file"), std::string::npos);
}

TEST(History, ADamagedHeaderIsAClearError) {
  TempDir dir;
  std::string db = history_path(dir.path());
  {
    History h(db);
    h.record(run_of("v1", 1, 1e-7, true));
  }
  std::string bytes = read_text(db);
  ASSERT_GT(bytes.size(), 100u);
  for (size_t i = 0; i < 16; ++i) bytes[i] = '#';
  write_text(db, bytes);
  boost::system::error_code ignored;
  fs::remove(db + "-wal", ignored);
  fs::remove(db + "-shm", ignored);
  EXPECT_THROW(
      {
        try {
          History h(db);
          h.runs();
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("history database " + db), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
}

TEST(History, ANewerSchemaIsRefused) {
  TempDir dir;
  std::string db = history_path(dir.path());
  { History h(db); }
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_exec(raw, "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    History h(db);
    FAIL() << "accepted schema 99";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace diagnose
