#include "steps/judgement/nan_origin.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "compare/manifest.h"
#include "compare/match.h"
#include "compare/uninitialized_ops.h"

namespace diagnose {

namespace {

// NaN and Inf counts over one direction of an op call's records.
struct NonFinite {
  uint64_t nan = 0, inf = 0;
  bool any() const { return nan + inf > 0; }
};

struct OpCall {
  const compare::ManifestRecord* first = nullptr;
  bool has_inputs = false;
  bool nonfinite_constant = false;  // given -inf or NaN as a constant: what it writes is meant
  NonFinite inputs, outputs;
  std::vector<const compare::ManifestRecord*> non_finite_outputs;
};

// Whether the float64 truth of every record is finite; absent when one has no truth or it
// cannot be read.
std::optional<bool> truth_finite(const compare::Manifest& dump,
                                 const std::vector<const compare::ManifestRecord*>& records) {
  if (records.empty()) return std::nullopt;
  bool finite = true;
  std::vector<double> chunk(1 << 15);
  for (const compare::ManifestRecord* record : records) {
    const std::optional<compare::TensorRef> truth = compare::manifest_truth(dump, *record);
    std::string error;
    auto stream = truth ? compare::TensorStream::open(*truth, &error) : nullptr;
    if (!stream) return std::nullopt;
    int64_t got;
    while ((got = stream->read(chunk.data(), chunk.size(), &error)) > 0)
      finite = finite && std::all_of(chunk.begin(), chunk.begin() + got, [](double v) { return std::isfinite(v); });
    if (got < 0) return std::nullopt;
  }
  return finite;
}

NanOrigin origin_of(const compare::Manifest& dump, const OpCall& call, int rank, const std::string& side,
                    NanOriginInputs inputs) {
  const compare::ManifestRecord& r = *call.first;
  const NonFinite& counts = inputs == NanOriginInputs::NonFinite ? call.inputs : call.outputs;
  NanOrigin o;
  o.rank = rank;
  o.side = side;
  o.op_key = r.name();
  o.op = r.op;
  o.kind = counts.nan > 0 ? "nan" : "inf";
  o.seq = r.seq;
  o.graph = r.graph;
  o.step = r.step;
  o.nan = counts.nan;
  o.inf = counts.inf;
  o.inputs = inputs;
  o.module = r.module;
  if (inputs != NanOriginInputs::NonFinite) o.truth_finite = truth_finite(dump, call.non_finite_outputs);
  return o;
}

// The op calls of one dump in execution order (records of kind "op", grouped by seq), but for
// the ops whose outputs are uninitialised memory: whatever NaN they hold nobody computed.
std::vector<OpCall> op_calls(const compare::Manifest& dump) {
  std::vector<const compare::ManifestRecord*> records;
  for (const compare::ManifestRecord& r : dump.records)
    if (r.kind == "op" && !compare::is_uninitialized_op(r.op) && !compare::is_uninitialized_op(r.op_key))
      records.push_back(&r);
  std::stable_sort(records.begin(), records.end(),
                   [](const compare::ManifestRecord* a, const compare::ManifestRecord* b) { return a->seq < b->seq; });
  std::vector<OpCall> calls;
  for (const compare::ManifestRecord* r : records) {
    if (calls.empty() || calls.back().first->seq != r->seq) calls.push_back({r, false, false, {}, {}, {}});
    OpCall& call = calls.back();
    call.nonfinite_constant = call.nonfinite_constant || r->nonfinite_constant;
    const bool input = r->io == "input";
    const std::optional<compare::RecordedStats> stats = compare::recorded_stats(*r);
    if (!stats) continue;  // an input without statistics is as good as not dumped
    call.has_inputs = call.has_inputs || input;
    NonFinite& counts = input ? call.inputs : call.outputs;
    counts.nan += stats->nan;
    counts.inf += stats->inf;
    if (!input && stats->nan + stats->inf > 0) call.non_finite_outputs.push_back(r);
  }
  return calls;
}

std::optional<NanOrigin> rank_origin(const compare::Manifest& dump, int rank, const std::string& side) {
  std::optional<NanOrigin> already_in_inputs;
  bool seen_non_finite = false;
  for (const OpCall& call : op_calls(dump)) {
    if (call.nonfinite_constant) {  // a mask's -inf: no origin, and what reads it inherits it
      seen_non_finite = seen_non_finite || call.outputs.any();
      continue;
    }
    if (call.outputs.any() && call.has_inputs && !call.inputs.any())
      return origin_of(dump, call, rank, side, NanOriginInputs::Finite);
    if (call.outputs.any() && !call.has_inputs && !seen_non_finite)
      return origin_of(dump, call, rank, side, NanOriginInputs::NotDumped);
    // The rule looks further for an op that makes NaN/Inf from finite inputs; without one,
    // the first op that reads a non-finite tensor nothing dumped produced is where it appears.
    if (call.inputs.any() && !seen_non_finite)
      already_in_inputs = origin_of(dump, call, rank, side, NanOriginInputs::NonFinite);
    seen_non_finite = seen_non_finite || call.inputs.any() || call.outputs.any();
  }
  return already_in_inputs;
}

std::string kind_text(const NanOrigin& o) { return o.kind == "nan" ? "NaN" : "Inf"; }

// " on rank 0 (target; its inputs not dumped)"
std::string where_text(const NanOrigin& o) {
  std::string notes = o.side;
  const auto note = [&](const std::string& text) { notes += (notes.empty() ? "" : "; ") + text; };
  if (o.inputs == NanOriginInputs::NotDumped) note("its inputs not dumped");
  if (o.truth_finite) note(*o.truth_finite ? "float64 truth finite there" : "NaN/Inf in float64 too");
  return (o.rank >= 0 ? " on rank " + std::to_string(o.rank) : "") + (notes.empty() ? "" : " (" + notes + ")");
}

}  // namespace

std::string nan_origin_inputs_name(NanOriginInputs inputs) {
  switch (inputs) {
    case NanOriginInputs::Finite: return "finite";
    case NanOriginInputs::NotDumped: return "not dumped";
    case NanOriginInputs::NonFinite: return "non-finite";
  }
  return "finite";
}

std::vector<NanOrigin> find_nan_origins(const std::string& dump_dir, const std::string& side) {
  std::vector<NanOrigin> origins;
  for (const auto& [rank, dir] : compare::manifest_ranks(dump_dir)) {
    const compare::Manifest dump = compare::read_manifest(dir);
    if (!dump.error.empty()) continue;
    if (std::optional<NanOrigin> origin = rank_origin(dump, rank, side)) origins.push_back(std::move(*origin));
  }
  return origins;
}

std::string nan_origin_summary(const std::vector<NanOrigin>& origins, const std::vector<std::string>& sides) {
  if (origins.empty()) return "";
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  for (const NanOrigin& o : origins) {
    if (o.inputs == NanOriginInputs::NonFinite)
      add(kind_text(o) + " is already in the inputs of " + o.op_key + where_text(o));
    else
      add(kind_text(o) + " first appears at " + o.op_key + where_text(o));
  }
  for (const std::string& side : sides)
    if (std::none_of(origins.begin(), origins.end(), [&](const NanOrigin& o) { return o.side == side; }))
      add(side + " stays finite");
  return text;
}

void report_nan_origins(const std::string& golden, const std::string& target, StepResult& result,
                        const std::string& golden_side, const std::string& target_side) {
  std::vector<NanOrigin> origins = find_nan_origins(target, target_side);
  for (NanOrigin& o : find_nan_origins(golden, golden_side)) origins.push_back(std::move(o));
  result.metrics["nan_origin"] = nan_origins_json(origins);
  if (origins.empty()) return;
  result.summary += "; " + nan_origin_summary(origins, {target_side, golden_side});
  result.evidence.push_back({"table", "NaN/Inf origin (first op with non-finite outputs from finite inputs)", "",
                             result.metrics["nan_origin"]});
}

nlohmann::json nan_origins_json(const std::vector<NanOrigin>& origins) {
  nlohmann::json table = nlohmann::json::array();
  for (const NanOrigin& o : origins)
    table.push_back({{"side", o.side},
                     {"rank", o.rank},
                     {"op", o.op_key},
                     {"operator", o.op},
                     {"kind", o.kind},
                     {"seq", o.seq},
                     {"graph", o.graph},
                     {"step", o.step},
                     {"nan", o.nan},
                     {"inf", o.inf},
                     {"inputs", nan_origin_inputs_name(o.inputs)},
                     {"module", o.module},
                     {"truth_finite", o.truth_finite ? nlohmann::json(*o.truth_finite) : nlohmann::json()}});
  return table;
}

}  // namespace diagnose
