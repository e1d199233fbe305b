// What the reports say about a run, typed and held in memory: built once from the run's
// state, verdict and the documents its steps left, written as report.json and read back from
// it, so that report.md, report.html, junit.xml and report.json are all rendered from it and
// `diagnose report` renders them again from report.json alone.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/verdict.h"

namespace diagnose {

// A document a step produced that the HTML page draws, in the file's own format.
struct ReportSection {
  enum class Kind {
    Compare,    // "format": "diagnose-compare-result" (docs/compare-output.md): per-op error plots
    Bisection,  // bisect/bisector.h Result::to_json: trials and how the search narrowed
    Trend,      // "format": "diagnose-history-trend" (ci/history.h): metrics across model versions
  };
  Kind kind = Kind::Compare;
  std::string path;         // the file it came from
  nlohmann::json document;  // what the renderer reads of it
};
std::string section_kind_name(ReportSection::Kind kind);

// A run as the report shows it: its command and how it ended as recorded, its times as text.
struct ReportedRun : RunCommand, RunEnding {
  nlohmann::json started, finished;  // ISO 8601 UTC or null; finished is null until the duration is known
  double duration_s = 0;
  bool dump_kept = false;   // the dump directory existed when the report was made
  nlohmann::json log_tail;  // of a run that did not succeed: its stderr's end, else its stdout's
  std::string stderr_tail;  // of a run that did not succeed (junit.xml)
};

struct StepReport : StepOutcome {
  nlohmann::json started;  // ISO 8601 UTC or null
  double duration_s = 0;
  std::vector<ReportedRun> runs;
  std::string when;  // the step's condition in the workflow, if any
  std::vector<ReportSection> sections;
};

struct RunReport {
  std::string workflow_name, workflow_path, run_dir;
  nlohmann::json started, finished;  // ISO 8601 UTC or null
  double duration_s = 0;
  bool complete = false;
  Verdict verdict;
  nlohmann::json dump_budget;  // null: none (State::dump_budget)
  std::vector<StepReport> steps;
};

// Reads what the steps left in the run directory (their documents, the logs' ends, the
// workflow's conditions in resolved.json) once.
RunReport run_report(const State& state, const Verdict& verdict);

nlohmann::json to_json(const RunReport& report);
// Throws std::runtime_error on a document that is not a report.json of this version.
RunReport run_report_from_json(const nlohmann::json& j);

}  // namespace diagnose
