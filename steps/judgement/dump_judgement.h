// Judging two dumps with the comparison core inside a step: the step keys every comparing
// kind shares (tolerances, preset, rank, worst_rows), the CSV/JSON evidence, the metrics,
// the first divergence and the source ops as findings.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "orchestrator/engine/step.h"

namespace diagnose {

struct CulpritCandidate;

// Below this share of judged rows a comparing step errors rather than pass (min_judged_share).
constexpr double kDefaultMinJudgedShare = 0.9;
// How many failing rows the evidence lists (worst_rows).
constexpr size_t kDefaultWorstRows = 5;

// A comparing kind's keys: `own`, then tolerances, preset, rank, worst_rows, min_judged_share.
std::vector<Property> with_comparison_properties(std::vector<Property> own);

// The comparison keys of a step (those with_comparison_properties() declares, or the tolerances and
// preset of a kind that declares fewer), parsed, checked and resolved once, at load.
struct ComparisonSettings {
  // The workflow's defaults.tolerances, then the step's tolerances:, as written.
  std::vector<compare::ToleranceOverride> overrides;
  compare::Tolerances tolerances;  // the presets under `overrides`, preset: forced on every row
  std::optional<int> rank;
  size_t worst_rows = kDefaultWorstRows;
  double min_judged_share = kDefaultMinJudgedShare;

  // What `diagnose compare` needs to judge so: -r, --preset and --tol options.
  std::string compare_options() const;
};
ComparisonSettings parse_comparison_settings(const StepSpec& step, const Workflow& workflow, Diagnostics& diagnostics);

// The options of a kind that compares dumps: its own keys in a struct derived from this one.
struct ComparingOptions : StepOptions {
  ComparisonSettings comparison;
};
// The settings of the step `context` evaluates, of a kind whose options are ComparingOptions.
const ComparisonSettings& comparison_settings(const StepContext& context);

// One comparison as a step records it: options from the step's comparison settings, the CSV
// tables and result.json written into out_dir and named as evidence, and the `diagnose compare`
// command that reproduces it with the same tolerances.
struct RecordedComparison {
  std::string error;  // the comparison could not start (compare::CompareResult::fatal_error); nothing written
  compare::CompareOptions options;
  std::optional<compare::CompareResult> compared;
  nlohmann::json document;  // result.json
  std::string reproduce;
  std::vector<Evidence> evidence;
};
// `what` names the comparison in the evidence.
RecordedComparison compare_and_record(const StepContext& context, const std::string& golden, const std::string& target,
                                      const std::optional<std::string>& referee, const std::string& out_dir,
                                      const std::string& what = "");

struct DumpJudgement {
  StepResult result;  // status, summary, metrics, findings, evidence, reproduce (the compare command)
  std::optional<compare::CompareResult> compared;  // absent when the comparison could not start
};

// Compares golden with target (and the referee, if any) under the step's comparison keys;
// writes the CSV tables and result.json into out_dir. Fails when a compared row fails,
// errors when nothing could be compared. `what` names the comparison in the summary.
DumpJudgement judge_dumps(const StepContext& context, const std::string& golden, const std::string& target,
                          const std::optional<std::string>& referee, const std::string& out_dir,
                          const std::string& what = "");

// judge_dumps for dumps the step's own runs produced (`requests`, and `runs` their records), and
// judge_final_outputs: failing rows judged on statistics because a dump's budget was reached are
// re-dumped by a targeted re-run and judged again on their tensors (targeted_rerun.h; metric
// targeted_rerun); the runs' commands lead the reproduce list, the culprit is the first source op
// (else the first failing op), and the summary of a failing comparison starts with `failure` and
// ends with what the culprit is in the model (its FX nodes, their modules, custom ops and source
// lines; metrics culprit_nodes and culprit_sources) when the dumps say.
// `golden_side` names the golden run in what the calls and their state say ("eager"). The rows the
// runs' final outputs contradict are suspected dump artifacts (dump_consistency.h, metric
// suspected_artifacts); `candidates`, when given, receives the culprits an intervention may confirm
// (culprit_confirmation.h).
StepResult judge_run_dumps(const StepContext& context, const std::vector<RunRequest>& requests,
                           const std::vector<RunRecord>& runs, const std::string& golden, const std::string& target,
                           const std::optional<std::string>& referee, const std::string& failure,
                           const std::string& golden_side, std::vector<CulpritCandidate>* candidates = nullptr);

// The final outputs and the state after each call (<run dir>/outputs) of plugin runs whose op
// dumps were judged into `result`: a failing output or state fails the step; outputs not all
// judged make a passing step an error, as does a side that is not a plugin run when the other
// is. Dumps the user brought (neither side a run) are left alone. With several calls, the
// summary says which calls match and which diverge (metric `calls`, call_judgement.h); state
// that differs after a call whose outputs match makes the step diagnose `state_defect`.
void judge_final_outputs(const StepContext& context, const std::string& golden, const std::string& target,
                         const std::optional<std::string>& referee, const std::string& golden_side, StepResult& result);

// The final outputs a plugin run wrote beside its op dump (<run dir>/outputs), or "" when
// `dump` is not a plugin run's dump.
std::string final_outputs_of(const std::string& dump);

// Where the nodes of a row came from in the user's code, each place once:
// "custom op demo::scale module layers.0 model.py:24 `h = scale(x)`". The place of the node whose
// value the row holds (its op_key's node: a fused kernel's output) comes first, the others follow
// in graph order.
std::vector<std::string> source_places(const compare::RowSpec& row);

// The operator a row belongs to: the dump's op name (aten.mm.default) when it has one, else its op_key.
std::string row_op(const compare::Row& row);

// The failing rows (of `only_op` when given), worst first (largest absolute error, then
// least similar): a table.
nlohmann::json worst_rows(const compare::CompareResult& result, size_t limit, const std::string& only_op = "");

}  // namespace diagnose
