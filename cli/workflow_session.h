// What `diagnose run` and `diagnose gate` share around the engine: loading the workflow with
// its errors printed, and, once the engine is done, the verdict, the reports and the history.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orchestrator/engine/engine.h"
#include "orchestrator/engine/verdict.h"
#include "orchestrator/report/run_report.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

// The workflow, or nullopt with its errors printed to stderr as file:line:column.
std::optional<Workflow> load_or_report(const std::string& path);

struct FinishedRun {
  RunReport report;                  // with the verdict
  std::vector<std::string> reports;  // the files written
};

// The verdict of a finished (or interrupted) run, its reports written and, when it was not
// interrupted, its record added to the history; what cannot be written is a warning.
FinishedRun finish_run(const Workflow& workflow, const EngineOutcome& outcome, Progress& progress);

// How the verdict is printed on stdout.
enum class VerdictOutput {
  Summary,  // a line per step, then the verdict block (report/terminal_verdict.h)
  Block,    // the verdict block alone (--quiet)
  Json,     // report.json's verdict object (--json)
};
VerdictOutput verdict_output(bool quiet, bool json);

void print_verdict(const FinishedRun& run, VerdictOutput output);

// The workflow run to its verdict: progress on stderr (JSON lines on stdout), the reports and
// history written, the verdict printed (with JSON progress, only as JSON); the exit code.
int run_to_verdict(const Workflow& workflow, const EngineOptions& options, LogFormat format, Verbosity verbosity,
                   VerdictOutput output);

}  // namespace diagnose
