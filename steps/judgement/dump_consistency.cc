#include "steps/judgement/dump_consistency.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

namespace diagnose {

namespace {

// The largest relative L2 distance of a call's final outputs and state, when every one of them
// passes with valid metrics; nullopt otherwise (a failing or unjudged output proves nothing).
std::optional<double> passing_outputs_distance(const compare::CompareResult& finals, int rank, int64_t step) {
  std::optional<double> worst;
  for (const compare::RowGroup& group : finals.groups)
    for (const compare::Row& row : group.rows) {
      if (row.spec.rank != rank || row.spec.token_id != step || row.verdict == compare::Verdict::NotJudged) continue;
      if (row.verdict != compare::Verdict::Pass || !row.metrics || !row.metrics_valid) return std::nullopt;
      worst = std::max(worst.value_or(0.0), row.metrics->relative_euclidean_distance);
    }
  return worst;
}

}  // namespace

std::string SuspectedArtifact::reason() const {
  std::ostringstream out;
  out.precision(2);
  out << op_key << (rank >= 0 ? " rank " + std::to_string(rank) : "") << " call " << step + 1
      << ": relative distance from eager " << row_distance << ", while every final output and state of that call "
      << "passes within " << outputs_distance << ": a value that wrong cannot have fed them (suspected dump artifact)";
  return out.str();
}

nlohmann::json SuspectedArtifact::to_json() const {
  return {{"op", op_key},
          {"rank", rank},
          {"call", step + 1},
          {"row_distance", row_distance},
          {"outputs_distance", outputs_distance},
          {"reason", reason()}};
}

std::vector<SuspectedArtifact> suspected_dump_artifacts(const compare::CompareResult& ops,
                                                        const compare::CompareResult& finals) {
  std::vector<SuspectedArtifact> artifacts;
  std::map<std::pair<int, int64_t>, std::optional<double>> outputs_of;  // by (rank, step)
  for (const compare::RowGroup& group : ops.groups)
    for (const compare::Row& row : group.rows) {
      const compare::RowSpec& s = row.spec;
      if (row.verdict != compare::Verdict::Fail || s.final_output || s.state || !row.metrics || !row.metrics_valid ||
          row.metrics->relative_euclidean_distance < kGrossRowDistance || is_suspected_artifact(artifacts, s))
        continue;
      const auto key = std::make_pair(s.rank, s.token_id);
      if (!outputs_of.count(key)) outputs_of[key] = passing_outputs_distance(finals, s.rank, s.token_id);
      const std::optional<double> outputs = outputs_of[key];
      const double distance = row.metrics->relative_euclidean_distance;
      if (outputs && *outputs <= distance * kArtifactOutputsFraction)
        artifacts.push_back({s.op_key, s.rank, s.token_id, distance, *outputs});
    }
  return artifacts;
}

bool is_suspected_artifact(const std::vector<SuspectedArtifact>& artifacts, const compare::RowSpec& row) {
  return std::any_of(artifacts.begin(), artifacts.end(), [&](const SuspectedArtifact& a) {
    return a.op_key == row.op_key && a.rank == row.rank && a.step == row.token_id;
  });
}

}  // namespace diagnose
