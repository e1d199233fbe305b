// One compared tensor pair: what the matchers produce and the metrics fill in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/metrics.h"
#include "compare/tensor.h"

namespace diagnose::compare {

enum class Direction { Input, Output };

// Statistics a producer recorded instead of the tensor (statistics-only dumps).
struct RecordedStats {
  std::optional<double> min, max, mean, l2;  // over finite elements; absent when none
  uint64_t nan = 0, inf = 0;
  bool counts_known = true;  // nan and inf were recorded (GE records them unless asked not to)
  // How far the values may be from what was computed, relative: GE prints six significant digits.
  double rounding = 0;
  std::string hash;  // of the data bytes; equal hashes mean equal tensors
};

// Where an FX node came from in the user's code (a record's `sources`, docs/dump-format.md);
// empty fields are unknown.
struct NodeSource {
  std::string node;
  std::string module;     // module path, "" for the root or unknown
  std::string custom_op;  // namespace::name of the custom op the node belongs to
  std::string line;       // file:line of the innermost frame of its stack trace
  std::string code;       // the text of that line
};

// The pair of tensors to compare and where they came from. Matchers fill this;
// nothing here is computed from tensor values.
struct RowSpec {
  int rank = -1;         // -1 when the layout has no ranks
  int graph = -1;        // graph id (TorchAir graph_N), -1 when none
  int64_t token_id = 0;  // token / step: the model call (0-based) where the dumps say
  // GE's own token of the row's graph (its k-th run) where token_id is the model call the run belonged
  // to (the plugin's record of calls beside a GE dump, ge_match.h); absent elsewhere.
  std::optional<int64_t> graph_step;

  // Identity of the op the row belongs to, stable across the two sides
  // (FX node name when known, GE op name otherwise). Rows with the same op_key
  // form one op for first-divergence / source-op analysis.
  std::string op_key;
  Direction direction = Direction::Output;
  int index = 0;  // input/output index within the op
  // Execution order of the op (GE timestamp, manifest sequence...). Rows sort by
  // (order, inputs before outputs, index).
  int64_t order = 0;

  std::string golden_path;  // msit's golden_data_path text
  // The project's dumps: the golden record's identity (ManifestRecord::match_key), under which
  // a float64 referee dump holds its truth.
  std::string golden_key;
  std::string golden_op_type;
  std::string my_path;  // msit's my_data_path text ("{file},outputs,{i}")
  std::string my_op_type;
  std::optional<TensorRef> golden;  // absent: nothing to compare against
  std::optional<TensorRef> mine;
  // The float64 truth of the golden tensor: its shadow (the golden record's truth_file) or
  // the same record of a float64 run (--referee).
  std::optional<TensorRef> referee;
  // The lowest floating precision the golden value was computed from, when the dump says
  // (a float32 intermediate of a bf16 model: BFloat16); Unknown otherwise.
  DType precision = DType::Unknown;
  // RMS of the golden op's largest floating input (from the dump's statistics), 0 when
  // unknown: the scale of the operands the value was computed from (docs/metrics.md, floor).
  double input_scale = 0;
  // Set instead of a readable tensor when that side recorded statistics only.
  std::optional<RecordedStats> golden_recorded, my_recorded;
  // Compared on statistics because a side's byte budget was reached (its record's not_kept).
  bool over_budget = false;
  // The golden input reads an uninitialised op's output (uninitialized_inputs): not judged.
  bool golden_reads_uninitialized = false;

  // Set by a matcher when the pair cannot be compared for a structural reason
  // (no FX link, counts differ...). Becomes the row's reason.
  std::string match_note;
  // Set by a matcher when the pair is compared on weaker evidence (by position across a count
  // difference, as msit does): said in the row's reasons, the metrics still computed.
  std::string pairing_note;
  // Comparing an op's own input with its output (GE Cast/TransData).
  bool self_compare = false;
  // A final output of the model (a `kind: final` record), not an op, node or buffer.
  bool final_output = false;
  // State a call of the compiled callable leaves for the next (a `kind: state` record: a buffer,
  // an input written in place; docs/dump-format.md, "State").
  bool state = false;
  // The FX nodes the tensor computes (several for a fused buffer) and where each came from:
  // the target record's, else the golden one's (the project's dumps).
  std::vector<std::string> fx_nodes;
  std::vector<NodeSource> sources;
  // The Dynamo-graph nodes (subgraph-isolation ids g<k>.<name>) fx_nodes were traced from, by the
  // target record's provenance: what a run must execute eagerly to take the tensor out of the
  // compiled code; empty when the dump does not say (a GE op, a dump without provenance).
  std::vector<std::string> graph_nodes;
  // The graph node whose value the golden record's is (its `value_of`): what a run observes to
  // see this value again (isolation.observe); "" when the golden dump does not say.
  std::string golden_value_of;
};

// NotJudged: nothing to judge by value (an op whose output is uninitialised memory): neither
// a pass nor a fail, and no evidence missing either.
enum class Verdict { Pass, Fail, NotComparable, NotJudged };
std::string verdict_name(Verdict v);  // "pass" / "fail" / "not_comparable" / "not_judged"

struct Row {
  RowSpec spec;
  int64_t data_id = 0;

  // msit columns computed on float32 data; absent when not computed.
  std::optional<SideStats> golden_stats;
  std::optional<SideStats> my_stats;
  std::optional<PairMetrics> metrics;
  // msit's metric columns are written only when neither side holds NaN/Inf;
  // the element-wise counts in `metrics` are valid either way.
  bool metrics_valid = false;
  std::optional<double> referee_rmse_golden, referee_rmse_mine;
  std::optional<double> truth_bound;  // the truth ratio rule's bound, when that rule decided

  std::vector<std::string> reasons;  // msit's cmp_fail_reason parts, then ours
  bool shape_differs = false;        // equal element count, different shape
  Verdict verdict = Verdict::NotComparable;
  std::string judged_by;  // tolerance preset / rule that decided
  // Passed on recorded statistics that agree within the tolerance (not on equal hashes): no
  // element-wise test, a wrong tensor can have right statistics.
  bool passed_on_statistics = false;
  // Where the sides disagree on NaN/Inf and the target is wrong there (judge.h's
  // non_finite_text, each kind, "; " between); "" when nowhere. Also in `reasons`.
  std::string non_finite;
};

}  // namespace diagnose::compare
