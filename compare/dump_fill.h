// Filling in the tensors a dump left out past its byte budget (docs/dump-format.md, "budget")
// from a later dump of the same run made for just those ops (a targeted re-run: the same run spec
// with dump.include naming their op keys). A record is filled only when the other dump holds the
// same record (same identity, dtype and shape) with a tensor whose hash equals the statistics the
// first dump recorded: it is then provably the tensor the first run computed, and the comparison
// judges it element by element (and by its float64 truth) instead of by statistics.
//
// The filled records name the copied files under tensors/<label>/ and say `"filled_by": label`;
// the manifest is rewritten atomically and every other line is kept as it was.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace diagnose::compare {

struct DumpFill {
  int filled = 0;     // records that got their tensors
  int differed = 0;   // the other dump's record holds another tensor (a run-to-run difference)
  int missing = 0;    // no such record with a tensor in the other dump (its own budget, a filter)
  std::string error;  // a dump could not be read or written (nothing changed then)
};

// Fills the records of `dump_dir` kept as statistics only because of the budget whose op_key is
// among `op_keys`, from `source_dir` (the same layout: one manifest, or rank{R}/ directories).
DumpFill fill_from(const std::string& dump_dir, const std::string& source_dir, const std::set<std::string>& op_keys,
                   const std::string& label);

}  // namespace diagnose::compare
