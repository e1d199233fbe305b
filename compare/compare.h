// The comparison core's entry point: two dump locations in, judged rows out.
// Knows nothing of how the dumps were produced (no engine, no PyTorch).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare/judge.h"
#include "compare/row.h"

namespace diagnose::compare {

// Which dump layout a path holds (docs/formats.md describes each).
enum class DumpKind {
  GeDump,        // TorchAir GE dump directory (graph txt + GE binaries)
  FxNpyDump,     // TorchAir FX npy dump (current or older layout)
  Manifest,      // the project's own dump (manifest.jsonl + npy files)
  NpyDirectory,  // any directory of .npy files
  NpyFile,
  GeDumpFile,
  Unknown,
};
std::string dump_kind_name(DumpKind k);
// Looks at `path` and names its layout; `detail` explains what was seen.
DumpKind detect_dump_kind(const std::string& path, std::string* detail);

struct CompareOptions {
  std::string golden_path;
  std::string my_path;
  std::optional<std::string> referee_path;  // float64 dump for three-way judgement
  std::optional<int> rank;                  // only this rank
  Tolerances tolerances;                    // presets by dtype + overrides
  int threads = 0;                          // 0: all cores
};

// A group of rows that share (rank, graph): one CSV file each.
struct RowGroup {
  int rank = -1;
  int graph = -1;
  std::vector<Row> rows;  // in execution order
};

// What is known of a source op's inputs: only Passed says that they pass.
enum class SourceInputs {
  Passed,        // dumped, each judged a pass
  NotDumped,     // none dumped: a source for being the first failing row
  NotAllJudged,  // none fails, some were not judged (not comparable, statistics missing)
};

// First failing row and the ops where the error starts (see divergence.h).
struct Divergence {
  int rank = -1, graph = -1;
  int64_t token_id = 0;
  std::optional<int64_t> first_failing_data_id;
  std::string first_failing_op;
  std::vector<std::string> source_ops;      // no input fails, some output fails
  std::vector<SourceInputs> source_inputs;  // of each of source_ops
};

struct CompareSummary {
  uint64_t rows = 0, compared = 0, passed = 0, failed = 0, not_comparable = 0;
  // Rows with nothing to judge (Verdict::NotJudged): not part of what must be judged.
  uint64_t not_judged = 0;
  std::vector<Divergence> divergences;
  // Ops the matcher saw but could not pair (e.g. GE ops without an FX link),
  // each with the reason.
  std::vector<std::pair<std::string, std::string>> unmatched;
  std::vector<std::string> warnings;  // unreadable files, duplicate keys...
  // Coverage: not comparable rows by reason (row_reason_kind), judged rows by the rule that decided.
  std::map<std::string, uint64_t> not_comparable_reasons, judged_by;
};

// A row's first reason without what names the particular tensor (paths, identities), so
// rows not comparable for the same reason count together.
std::string row_reason_kind(const Row& row);

struct CompareResult {
  DumpKind golden_kind = DumpKind::Unknown, my_kind = DumpKind::Unknown;
  std::string golden_detail, my_detail;
  std::vector<RowGroup> groups;
  CompareSummary summary;
  // Set when the inputs could not be read at all (exit code 3).
  std::string fatal_error;
};

CompareResult run_compare(const CompareOptions& options);

// Exit code for a result: 0 all compared rows pass, 1 some fail, 3 unreadable inputs.
int exit_code_for(const CompareResult& result);

}  // namespace diagnose::compare
