// The per-op rows checked against the final outputs of their call (docs/workflow.md, "How a
// culprit is confirmed"): a row that fails grossly while every final output and state of the
// same call (rank, step) passes orders of magnitude closer to eager cannot hold the value that fed
// them — the dump read another buffer than the one named. Such a row is a suspected dump
// artifact: listed with the reason, never a first divergence or culprit unless an intervention
// run confirms it (culprit_confirmation.h).
#pragma once

#include "steps/layer.h"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"

namespace diagnose {

// A row this far from its golden value (relative L2 distance) fails grossly: far beyond any
// dtype's rounding (bfloat16's is 4e-3).
constexpr double kGrossRowDistance = 0.1;
// ... and its call's outputs at most this fraction of that distance: the row's error cannot have
// reached them.
constexpr double kArtifactOutputsFraction = 1e-4;

struct SuspectedArtifact {
  std::string op_key;
  int rank = -1;
  int64_t step = 0;
  double row_distance = 0;      // the row's relative L2 distance from the golden
  double outputs_distance = 0;  // the largest of its call's final outputs and state
  std::string reason() const;
  nlohmann::json to_json() const;
};

// The failing op rows of `ops` (one entry per op key, rank and call) that fail grossly while every
// final output and state record of their call in `finals` (a comparison of the runs' outputs/)
// passes within kArtifactOutputsFraction of their distance. Rows whose metrics are not valid
// (non-finite values) and calls without judged outputs are never suspected.
std::vector<SuspectedArtifact> suspected_dump_artifacts(const compare::CompareResult& ops,
                                                        const compare::CompareResult& finals);

// Whether `row` is one of `artifacts`.
bool is_suspected_artifact(const std::vector<SuspectedArtifact>& artifacts, const compare::RowSpec& row);

}  // namespace diagnose
