// Reader of the project's own dump format (docs/dump-format.md): manifest.jsonl + npy.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/row.h"
#include "compare/tensor.h"

namespace diagnose::compare {

constexpr int kDumpFormatVersion = 1;

struct ManifestRecord {
  int64_t seq = 0;
  std::string kind = "op";
  std::string op_key, op, io;
  int index = 0;
  std::optional<int> item;
  // A final output's place in the model's return value (`logits`,
  // `past_key_values.layers.0.keys`); empty for the return value itself and in dumps written
  // before paths, whose final outputs are known by `index` alone.
  std::string path;
  std::string file;  // relative to the dump directory; empty for stats-only records
  // The float64 truth of this tensor (shadow execution, docs/dump-format.md); empty when none.
  std::string truth_file;
  // The truth in its compact form: truth - value in float32, beside `file`; empty when none.
  std::string truth_delta_file;
  // Why a record has no `file`: "stats_only" (the run kept statistics only), "budget" (the
  // dump's byte budget was reached); empty when it has one or the producer did not say.
  std::string not_kept;
  std::string dtype;  // as torch prints it
  // The lowest floating precision the value was computed from (a float32 intermediate of a
  // bf16 model: torch.bfloat16); empty when the producer did not record it.
  std::string precision;
  Shape shape;
  std::string module;
  // A module output's (dump.boundaries) innermost module holding modules that the value leaves.
  std::string leaves;
  std::vector<std::string> fx_nodes;  // the FX nodes the tensor computes (several for a fused buffer)
  std::vector<NodeSource> sources;    // where each FX node came from in the user's code
  // The subgraph-isolation ids (g<k>.<name>) of the Dynamo-graph nodes fx_nodes were traced
  // from: a run with isolation.eager_nodes these takes the tensor out of the compiled code.
  std::vector<std::string> graph_nodes;
  // The one graph node whose value this is (up to a view), when the producer says (fx records).
  std::string value_of;
  // The op (or one of the FX nodes) was given a non-finite constant (masked_fill with -inf, a
  // causal mask filled with -inf): the Inf/NaN it writes is meant, not an overflow.
  bool nonfinite_constant = false;
  int graph = -1;
  int64_t step = 0;
  nlohmann::json stats;  // null when absent

  // The op or final output the tensor belongs to, as rows name it: op_key, or
  // "{op_key}.{path}" for a final output with a path ("output.logits").
  std::string name() const;
  // "{op_key}.{INPUT|OUTPUT}.{index}[.{item}]", as reports show it; a final output with a path
  // is its name: paths pair outputs, not their positions.
  std::string identity() const;
  // What two dumps are matched by: the identity within its graph and step.
  std::string match_key() const;
  // The identity and match key by position, as before paths: they pair a final output with one
  // of a dump that has no paths.
  std::string positional_identity() const;
  std::string positional_match_key() const;
};

struct Manifest {
  std::string dir;
  nlohmann::json header;
  std::vector<ManifestRecord> records;
  bool complete = false;                // an `end` record was seen
  std::optional<int64_t> budget_limit;  // a `budget` record was seen
  std::vector<std::string> warnings;    // torn lines, bad records
  std::string error;                    // unreadable manifest or unknown version
};

Manifest read_manifest(const std::string& dir);
// One `tensor` line of a manifest; nullopt (and why) when a field is missing or malformed.
std::optional<ManifestRecord> tensor_record(const nlohmann::json& line, std::string* why);
// Whether a record's file path is empty, absolute or climbs out of its dump directory.
bool leaves_dump_directory(const std::string& file);

// The statistics a record carries, if any (every record of a statistics-only dump;
// optional beside a file).
std::optional<RecordedStats> recorded_stats(const ManifestRecord& record);

// The tensor a record points at, with the declared dtype attached; an error ref
// for stats-only records or unreadable files.
TensorRef manifest_tensor(const Manifest& manifest, const ManifestRecord& record);
// The record's float64 truth; absent when it has none. A compact truth (truth_delta_file) reads
// as the record's tensor plus its float32 difference, added in float64.
std::optional<TensorRef> manifest_truth(const Manifest& manifest, const ManifestRecord& record);

}  // namespace diagnose::compare
