// Every culprit confirmed by an intervention (docs/workflow.md, "How a culprit is confirmed"):
// before an op or buffer that graph_dump_compare localised becomes the verdict's culprit, the
// compiled model runs once more with that candidate's Dynamo-graph nodes run eagerly (run spec
// isolation.eager_nodes, the rest compiled as the user runs it, final outputs only). Where the
// final outputs failed, the candidate is confirmed when they now pass. Where they passed (a
// defect masked downstream), the run also observes the candidate's own value (the golden row's
// value_of, run eagerly on what the compiled code before it made: isolation.observe), confirmed
// when that row now passes against the golden's float64 truth; where it cannot be observed, when
// the final outputs come at least kMaskedDrop times closer to their float64 truth (else to eager). At most
// kMaxConfirmationRuns runs; a candidate whose dump names no graph node (a TorchAir GE op without the plugin's map of
// graph nodes: kGeOpUnconfirmable) cannot be confirmed, and an unconfirmed culprit is never named. A state culprit
// (state_defect: state differs after a call whose outputs match) is confirmed by forcing the write: one run with every
// node that writes the differing state in place run eagerly (run spec isolation.eager_writes), confirmed when the final
// outputs and the state of every call then match.
#pragma once

#include "steps/layer.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "orchestrator/engine/step.h"
#include "steps/judgement/dump_consistency.h"

namespace diagnose {

constexpr size_t kMaxConfirmationRuns = 2;
// A masked defect whose value cannot be observed is confirmed when taking it out brings the
// final outputs this many times closer.
constexpr double kMaskedDrop = 10;

// The category of a failure whose op candidates no intervention confirmed (verdict_categories.cc).
inline constexpr const char* kUnconfirmedDivergence = "unconfirmed_divergence";

// Why a TorchAir GE op cannot be confirmed (docs/workflow.md, How a culprit is confirmed).
extern const char* const kGeOpUnconfirmable;

// An op row that may be the culprit, with what an intervention needs.
struct CulpritCandidate {
  std::string op;                        // its op key
  std::vector<std::string> graph_nodes;  // isolation ids of the Dynamo-graph nodes it was traced from
  std::vector<std::string> fx_nodes;
  std::vector<std::string> sources;  // where its nodes come from in the user's code
  int rank = -1, graph = -1;         // -1: none (a dump without ranks; a state culprit, forced on every rank)
  std::vector<int> failing_graphs;   // the graphs (ids) where a row of its op fails on its rank, in order
  int64_t step = 0;
  bool suspected_artifact = false;
  bool ge_op = false;  // a TorchAir GE op (a GE dump's row): no run can take it out of the compiled graph
  // a state culprit: the state paths (buffers.k_cache) whose in-place writes the run forces
  std::vector<std::string> forced_writes;
  // its failing row as the pass judged it (rmse to float64 in referee_rmse_mine, when it had a truth)
  std::optional<compare::Row> row;
  // a producer the alignment left unmapped (with_unmapped_producers): the op key of the candidate
  // that reads it; "" for an op row of its own
  std::string producer_of;
  // the graph node whose value the run records (isolation.observe): a masked culprit's own
  // value, the golden row's value_of when that node runs eagerly; "" none
  std::string observe;
};

// The candidate's own value in an intervention run that observed it (observed/<node>/<call>.npy),
// judged as the pass judged its row: against the same golden value and float64 truth, by the
// same rules. `error` says why there is no judged row.
struct Observation {
  std::optional<compare::Row> row;
  std::string error;
};
Observation judge_observed_value(const CulpritCandidate& candidate, const std::string& run_dir,
                                 const compare::Tolerances& tolerances);

// The candidates of a comparison whose culprit is `culprit`, most likely first: the culprit, then
// the other failing op rows of the culprit's call and rank in execution order (suspected
// artifacts only when nothing else fails), each op once; at most kMaxConfirmationRuns.
std::vector<CulpritCandidate> culprit_candidates(const compare::CompareResult& compared, const std::string& culprit,
                                                 const std::vector<SuspectedArtifact>& artifacts);

// `candidates`, each followed by the producer of the buffers it reads that the alignment left unmapped
// (the target run's status.json in `run_dir`, inductor_unmapped: a buffer of a node a user backend's pass
// created or changed, which no golden node holds and the dump leaves out, so that its readers' rows
// are the first to fail), as a candidate of its own: its graph_nodes run eagerly confirm it as
// any op row's would. It is that buffer in each of the graphs where the reader's rows fail (a pass
// changes every graph it compiles: the prefill's and the decode's), named after the reader's graph's.
// At most kMaxConfirmationRuns in all, the likeliest first.
std::vector<CulpritCandidate> with_unmapped_producers(const std::vector<CulpritCandidate>& candidates,
                                                      const std::string& run_dir);

// How op candidates that no intervention confirmed are named, each as `named` says it
// ("the op rows point at `mul` (graph nodes g0.mul), an unconfirmed candidate, not a culprit").
std::string unconfirmed_candidates(const std::vector<std::string>& named);

// A run of the compiled model with the candidate's graph_nodes (and the writers of its
// forced_writes) run eagerly, named `name`.
using InterventionRun = std::function<RunRequest(const std::string& name, const CulpritCandidate& candidate)>;

struct ConfirmationSides {
  std::string golden_outputs;  // the golden run's outputs/
  std::string before_outputs;  // the compiled run's outputs/ as the user runs it (or the dumped run's)
  std::optional<std::string> referee_outputs;
};

// Confirms the first candidate it can (one run each, at most kMaxConfirmationRuns) and records it
// in `result`: metric `confirmation` (docs/report-schema.json), a finding, the summary. Confirmed:
// the culprit and its nodes become the candidate's. Otherwise the culprit is withdrawn (metrics
// culprit null, localized false: the next steps search on; an op candidate's category
// kUnconfirmedDivergence) and the summary names the candidates unconfirmed and says why.
void confirm_culprit(const StepContext& context, const std::vector<CulpritCandidate>& candidates,
                     const ConfirmationSides& sides, const InterventionRun& intervention, StepResult& result);

}  // namespace diagnose
