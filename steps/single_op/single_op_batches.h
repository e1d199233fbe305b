// The bookkeeping of single_op_check: the op inventory of an eager run, its split into
// batches (one process each), and what a batch's progress file says after the process
// ended, so that the op that crashed its process is blamed and the rest run again.
#pragma once

#include "steps/layer.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runspec/run_spec.h"

namespace diagnose {

struct OpCount {
  std::string op;
  long long calls = 0;
};

// `python -m diagnose_pytorch ops` output: [{"op": "aten.mm.default", "calls": 3}, ...].
// Returns nullopt and sets *error on anything else.
std::optional<std::vector<OpCount>> parse_op_inventory(const std::string& text, std::string* error);

// The arguments of `python -m diagnose_pytorch single-op`: `ops` of the eager run in eager_dir,
// compiled alone with the target's backend, device and dtype and the switches file (empty:
// none), results into `out`. `batched`: the plugin may first compile many one-op graphs
// together (it checks alone every op that batch does not settle); false: each op only alone.
std::vector<std::string> single_op_args(const std::string& eager_dir, const std::string& out, const RunSpec& target,
                                        const std::string& switches_file, const std::vector<std::string>& ops,
                                        bool batched = true);

// At most `count` batches of consecutive ops, sizes differing by one at most.
std::vector<std::vector<std::string>> split_into_batches(const std::vector<std::string>& ops, size_t count);

// At most `count` batches of about equal cost, each op costing what `measured` says (seconds
// an earlier diagnosis measured) and an op not measured the mean of those that were: the
// costliest op first into the batch that costs least so far; each batch keeps the ops' order.
// Without measurements: split_into_batches.
std::vector<std::vector<std::string>> split_by_cost(const std::vector<std::string>& ops, size_t count,
                                                    const std::map<std::string, double>& measured);

// The seconds each op cost (compile_s + run_s) in the newest earlier diagnosis of the workflow
// named `workflow` beside `run_dir` (the same output directory): its report.json's step
// `step_id`, metric op_times; `report` is that file, empty when there is none.
struct MeasuredCosts {
  std::string report;
  std::map<std::string, double> seconds;
};
MeasuredCosts earlier_op_costs(const std::string& run_dir, const std::string& workflow, const std::string& step_id);

// What one op cost in its single-op process: its one-op graphs' first calls through the backend
// (compile_s, `compiles` of them, plus its graphs' share of a batched compile) and its eager
// and compiled calls otherwise (run_s). settled_in_batched_compile: its results are those of
// a batched compile (bitwise equal to eager), not of a compile alone.
struct OpCost {
  double compile_s = 0, run_s = 0;
  long long compiles = 0;
  nlohmann::json shared_compiles = nlohmann::json::array();  // [{"op_key", "compiled_as"}]
  bool settled_in_batched_compile = false;
};

// The costs in entries {"op", "compile_s", "run_s", "compiles", "shared_compiles"} (a
// single-op process's, or single_op_check's metric op_times); an entry without compile_s and
// run_s is left out, and anything but an array gives none.
std::map<std::string, OpCost> op_costs(const nlohmann::json& entries);
// The op_costs of a single-op process's single_op.json ({"ops": [...]}); text that is not such
// a document gives none.
std::map<std::string, OpCost> read_op_costs(const std::string& single_op_json);
// How many batched compiles (many one-op graphs compiled at once) a single-op process ran: the
// length of its single_op.json's "batched_compiles".
long long read_batched_compile_count(const std::string& single_op_json);

// An op the single-op run did not check, and why: `reason` is a short class ("random", "no
// tensor output", "not registered"), `message` the plugin's words.
struct SkippedOp {
  std::string op, reason, message;
};

struct BatchOutcome {
  std::vector<std::string> done;                            // checked (compared later)
  std::vector<std::pair<std::string, std::string>> errors;  // op, message (compile error...)
  std::vector<SkippedOp> skipped;                           // not checked on purpose (random...)
  std::optional<std::string> crashed;                       // started, never finished, process died
  std::vector<std::string> not_started;                     // to run again in a new batch
  std::optional<std::string> setup_error;                   // why the process could not set up
  bool died_in_batched_compile = false;                     // run the rest with each op only alone
};

// Reads progress.jsonl lines {"op", "event": "start"|"done"|"error"|"skipped", "message"[,
// "reason"]} of a batch whose process ended (`process_ok`: exit 0); a line {"event":
// "setup_failed", "message"} (the process could not set up: the model script did not reach
// its first compiled call) gives setup_error. A torn or unreadable line is ignored. When the
// process died, the op that started last without finishing crashed it; ops never started
// are returned to run again. When it exited 0, ops without any event count as errors. A line
// {"event": "batched_compile"} starts a batched compile, before its ops' events: a process that
// died after it and before any op event died in it (no op to blame).
BatchOutcome read_batch_progress(const std::string& progress_text, const std::vector<std::string>& batch,
                                 bool process_ok);

}  // namespace diagnose
