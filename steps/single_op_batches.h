// The bookkeeping of single_op_check: the op inventory of an eager run, its split into
// batches (one process each), and what a batch's progress file says after the process
// ended, so that the op that crashed its process is blamed and the rest run again.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace diagnose {

struct OpCount {
  std::string op;
  long long calls = 0;
};

// `python -m diagnose_pytorch ops` output: [{"op": "aten.mm.default", "calls": 3}, ...].
// Returns nullopt and sets *error on anything else.
std::optional<std::vector<OpCount>> parse_op_inventory(const std::string& text, std::string* error);

// At most `count` batches of consecutive ops, sizes differing by one at most.
std::vector<std::vector<std::string>> split_into_batches(const std::vector<std::string>& ops, size_t count);

struct BatchOutcome {
  std::vector<std::string> done;                            // checked (compared later)
  std::vector<std::pair<std::string, std::string>> errors;  // op, message (compile error...)
  std::optional<std::string> crashed;                       // started, never finished, process died
  std::vector<std::string> not_started;                     // to run again in a new batch
};

// Reads progress.jsonl lines {"op", "event": "start"|"done"|"error", "message"} of a batch
// whose process ended (`process_ok`: exit 0). A torn or unreadable line is ignored. When the
// process died, the op that started last without finishing crashed it; ops never started
// are returned to run again. When it exited 0, ops without any event count as errors.
BatchOutcome read_batch_progress(const std::string& progress_text, const std::vector<std::string>& batch,
                                 bool process_ok);

}  // namespace diagnose
