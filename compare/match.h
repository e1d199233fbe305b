// Matchers: pair the tensors of two dumps into rows. One function per layout pair;
// run_compare() picks the function from the detected layouts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compare/row.h"

namespace diagnose::compare {

struct MatchResult {
  std::vector<RowSpec> rows;
  // Things seen on one side that could not be paired: (name, reason).
  std::vector<std::pair<std::string, std::string>> unmatched;
  std::vector<std::string> warnings;
  // Set when nothing could be matched at all (unreadable directory...).
  std::string fatal_error;
};

// Why a golden state record (`kind: state`) has no target partner: an argument the golden run
// wrote in place during a call and the target run did not (its version counter did not move).
inline constexpr const char* kStateOnlyInGolden = "state written in place by the golden run only, not by the target";
inline constexpr const char* kStateOnlyInTarget = "state written in place by the target only, not by the golden run";
// A target state record against a dump written before state was recorded (an older baseline).
inline constexpr const char* kGoldenRecordsNoState = "state; the golden dump records none";

// TorchAir: GE dump directory (mine) against an FX npy dump (golden).  ge_match.cc
MatchResult match_ge_vs_fx(const std::string& fx_dir, const std::string& ge_dir, std::optional<int> rank);
// TorchAir: GE dump against GE dump (fusion on vs fusion off).  ge_match.cc
MatchResult match_ge_vs_ge(const std::string& golden_ge_dir, const std::string& my_ge_dir, std::optional<int> rank);
// Two directories of .npy files, by relative path without extension.  match.cc
MatchResult match_npy_dirs(const std::string& golden_dir, const std::string& my_dir);
// Two of the project's own dumps, by record key.  match.cc
MatchResult match_manifests(const std::string& golden_dir, const std::string& my_dir, std::optional<int> rank);
// The rank dumps of one of the project's dumps, by rank: rank{R}/ directories, or the
// directory itself as rank -1 when it holds a manifest.jsonl; empty when it is neither.  match.cc
std::map<int, std::string> manifest_ranks(const std::string& dir);
// Single file against single file (npy or GE dump binary).  match.cc
MatchResult match_files(const std::string& golden_file, const std::string& my_file);

// Attaches referee tensors to rows: the referee dump has the golden dump's layout,
// so each golden tensor's counterpart sits at the same relative path (or, for
// manifests, under the same key).  match.cc
void attach_referee(const std::string& golden_root, const std::string& referee_root, std::vector<RowSpec>& rows,
                    std::vector<std::string>& warnings);

}  // namespace diagnose::compare
