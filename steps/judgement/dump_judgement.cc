#include "steps/judgement/dump_judgement.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "compare/divergence.h"
#include "compare/report.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "steps/judgement/call_judgement.h"
#include "steps/judgement/cross_rank.h"
#include "steps/judgement/culprit_confirmation.h"
#include "steps/judgement/dump_consistency.h"
#include "steps/judgement/nan_origin.h"
#include "steps/plugin_runs/targeted_rerun.h"

namespace diagnose {

namespace fs = boost::filesystem;

std::vector<Property> with_comparison_properties(std::vector<Property> own) {
  std::vector<Property> comparison = {
      tolerances_property("Tolerance overrides for this step, by preset name."),
      optional("preset", string_schema("Use this tolerance preset for every row instead of choosing by dtype.")),
      optional("rank", integer_schema("Compare only this rank (and not the ranks with each other).", 0)),
      optional("worst_rows",
               defaulted(integer_schema("How many failing rows the evidence table lists.", 0), kDefaultWorstRows)),
      optional("min_judged_share",
               defaulted(number_schema("The share of rows that must be judged (not \"not comparable\"); "
                                       "below it the step errors instead of passing.",
                                       0, 1),
                         kDefaultMinJudgedShare))};
  own.insert(own.end(), comparison.begin(), comparison.end());
  return own;
}

ComparisonSettings parse_comparison_settings(const StepSpec& step, const Workflow& workflow, Diagnostics& diagnostics) {
  const YAML::Node& node = step.node;
  ComparisonSettings settings;
  settings.overrides = workflow.defaults.tolerance_overrides;
  for (compare::ToleranceOverride& o : tolerance_overrides(node["tolerances"], &diagnostics))
    settings.overrides.push_back(std::move(o));
  settings.tolerances = compare::Tolerances::defaults();
  // tolerance_overrides kept only what the presets accept: applying cannot fail.
  for (const compare::ToleranceOverride& o : settings.overrides) settings.tolerances.apply(o);
  if (YAML::Node preset = node["preset"]) {
    std::vector<std::string> names;
    for (const auto& [name, p] : settings.tolerances.presets) names.push_back(name);
    if (!settings.tolerances.presets.count(preset.Scalar()))
      diagnostics.error(preset.Mark(), "steps." + step.id + ".preset: unknown tolerance preset '" + preset.Scalar() +
                                           "'" + did_you_mean(preset.Scalar(), names));
    settings.tolerances.forced_preset = preset.Scalar();
  }
  if (node["rank"]) settings.rank = node["rank"].as<int>();
  if (node["worst_rows"]) settings.worst_rows = node["worst_rows"].as<size_t>();
  if (node["min_judged_share"]) settings.min_judged_share = node["min_judged_share"].as<double>();
  return settings;
}

std::string ComparisonSettings::compare_options() const {
  std::string text;
  if (rank) text += " -r " + std::to_string(*rank);
  if (tolerances.forced_preset) text += " --preset " + shell_quote(*tolerances.forced_preset);
  for (const compare::ToleranceOverride& o : overrides) text += " --tol " + shell_quote(o.assignment());
  return text;
}

const ComparisonSettings& comparison_settings(const StepContext& context) {
  return context.options<ComparingOptions>().comparison;
}

namespace {

// The (graph, call) groups of rows of which none was judged: "graph 1 call 1 (12 rows)".
std::string unjudged_groups(const compare::CompareResult& compared) {
  std::map<std::pair<int, int64_t>, std::pair<size_t, size_t>> judged_of;  // (judged, rows)
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) {
      if (row.verdict == compare::Verdict::NotJudged) continue;
      auto& [judged, rows] = judged_of[{group.graph, row.spec.token_id}];
      ++rows;
      if (row.verdict != compare::Verdict::NotComparable) ++judged;
    }
  std::string out;
  for (const auto& [key, counts] : judged_of) {
    if (counts.first > 0) continue;
    out += (out.empty() ? "" : ", ") + (key.first >= 0 ? "graph " + std::to_string(key.first) + " " : "") +
           call_name(key.second) + " (" + std::to_string(counts.second) + " rows)";
  }
  return out;
}

// Where the failing rows of `op` disagree with the golden on NaN/Inf, the target wrong there:
// "golden NaN at 1 of 3 elements, target finite there (first at [0])"; "" when nowhere.
std::string non_finite_of(const compare::CompareResult& compared, const std::string& op) {
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (row.spec.op_key == op && row.verdict == compare::Verdict::Fail && !row.non_finite.empty())
        return row.non_finite;
  return "";
}

// What `op` is in a finding: a model output or the state after a call (final_output or state rows,
// where no error can start: they only carry what the ops computed), else an op.
std::string row_kind(const compare::CompareResult& compared, const std::string& op) {
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (row.spec.op_key == op && (row.spec.final_output || row.spec.state))
        return row.spec.state ? "state" : "output";
  return "op";
}

// Why `op` fails: where it disagrees on NaN/Inf (": golden NaN at ..."), else how far its first
// failing output is from its float64 truth, against eager's distance (" (rmse to float64
// 2.7e-05, 355x eager's 7.6e-08)"); "" when neither is known.
std::string failure_detail(const compare::CompareResult& compared, const std::string& op) {
  if (const std::string non_finite = non_finite_of(compared, op); !non_finite.empty()) return ": " + non_finite;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) {
      if (row.spec.op_key != op || row.verdict != compare::Verdict::Fail || !row.truth_bound) continue;
      std::ostringstream out;
      out.precision(2);
      out << " (rmse to float64 " << *row.referee_rmse_mine;
      if (*row.referee_rmse_golden > 0)
        out << ", " << std::fixed << std::setprecision(0) << *row.referee_rmse_mine / *row.referee_rmse_golden
            << "x eager's " << std::defaultfloat << std::setprecision(2) << *row.referee_rmse_golden << ")";
      else
        out << "; eager's is 0)";
      return out.str();
    }
  return "";
}

// Whether a failing row is an op, node or buffer rather than a final output of the model.
bool op_row_fails(const compare::CompareResult& compared) {
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (row.verdict == compare::Verdict::Fail && !row.spec.final_output && !row.spec.state) return true;
  return false;
}

// The first row of `op` whose dump names the FX nodes its tensor computes; null when none does.
const compare::RowSpec* row_with_nodes(const compare::CompareResult& compared, const std::string& op) {
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (row.spec.op_key == op && !row.spec.fx_nodes.empty()) return &row.spec;
  return nullptr;
}

}  // namespace

std::vector<std::string> source_places(const compare::RowSpec& row) {
  const std::string own_node = row.op_key.substr(0, row.op_key.find('-'));
  std::vector<compare::NodeSource> sources = row.sources;
  std::stable_partition(sources.begin(), sources.end(),
                        [&](const compare::NodeSource& s) { return !own_node.empty() && s.node == own_node; });
  std::vector<std::string> places;
  for (const compare::NodeSource& source : sources) {
    std::vector<std::string> parts;
    if (!source.custom_op.empty()) parts.push_back("custom op " + source.custom_op);
    if (!source.module.empty()) parts.push_back("module " + source.module);
    if (!source.line.empty()) parts.push_back(source.line + (source.code.empty() ? "" : " `" + source.code + "`"));
    std::string place = joined(parts, " ");
    if (!place.empty() && std::find(places.begin(), places.end(), place) == places.end()) places.push_back(place);
  }
  return places;
}

namespace {

// What a localised op (an Inductor buffer, a GE op, an FX node) is in the model: "fused FX nodes mean,
// sub, mul; from model.py:25 `...`, model.py:24 `...`"; "" when its dump does not say.
std::string origin_text(const compare::CompareResult& compared, const std::string& op) {
  const compare::RowSpec* row = row_with_nodes(compared, op);
  if (!row) return "";
  std::string text = (row->fx_nodes.size() > 1 ? "fused FX nodes " : "FX node ") + joined(row->fx_nodes);
  const std::vector<std::string> places = source_places(*row);
  if (!places.empty()) text += "; from " + joined(places);
  return text;
}

// The state after each call in the final outputs' comparison `finals`, judged into its result `f`
// (whose summary already says which calls diverge): each piece of state that differs as a finding
// and, when state differs after a call whose outputs match, the step's category state_defect with
// the state as its culprit.
void judge_state(const StepContext& context, const compare::CompareResult& finals, const std::string& golden,
                 const std::string& golden_side, StepResult& f) {
  CallJudgement calls = judge_calls(finals, comparison_settings(context).tolerances);
  attribute_state_writers(calls, final_outputs_of(golden), golden);
  const std::vector<std::string> state = calls.state_texts(golden_side);
  for (const std::string& text : state) f.findings.push_back({text, ""});
  const std::optional<int64_t> state_first = calls.state_diverges_first();
  if (!state_first || f.status != StepStatus::Fail) return;
  f.metrics["category"] = "state_defect";
  f.metrics["culprit"] = "state." + calls.state.front().path;
  std::vector<std::string> paths;
  for (const StateDifference& d : calls.state) paths.push_back(d.path);
  f.metrics["differing_state"] = {{"step", *state_first}, {"paths", paths}};
  f.summary = "the compiled graph does not carry the state between calls: call " + std::to_string(*state_first + 1) +
              "'s outputs match, but " + state.front() + "; " + f.summary;
}

}  // namespace

std::string final_outputs_of(const std::string& dump) {
  const fs::path run_dir = fs::path(dump).parent_path();
  if (fs::path(dump).filename() != "dump" || !fs::exists(run_dir / "status.json")) return "";
  return (run_dir / "outputs").string();
}

std::string row_op(const compare::Row& row) {
  if (!row.spec.golden_op_type.empty()) return row.spec.golden_op_type;
  return !row.spec.my_op_type.empty() ? row.spec.my_op_type : row.spec.op_key;
}

nlohmann::json worst_rows(const compare::CompareResult& result, size_t limit, const std::string& only_op) {
  std::vector<const compare::Row*> failing;
  for (const compare::RowGroup& group : result.groups)
    for (const compare::Row& row : group.rows)
      if (row.verdict == compare::Verdict::Fail && (only_op.empty() || row_op(row) == only_op)) failing.push_back(&row);
  auto worse = [](const compare::Row* a, const compare::Row* b) {
    if (!a->metrics || !b->metrics) return !a->metrics && b->metrics.has_value();
    if (a->metrics->max_absolute_error != b->metrics->max_absolute_error)
      return a->metrics->max_absolute_error > b->metrics->max_absolute_error;
    return a->metrics->cosine_similarity < b->metrics->cosine_similarity;
  };
  std::stable_sort(failing.begin(), failing.end(), worse);
  nlohmann::json table = nlohmann::json::array();
  for (size_t i = 0; i < failing.size() && i < limit; ++i) {
    const compare::Row& row = *failing[i];
    nlohmann::json entry = {{"op", row.spec.op_key},
                            {"io", row.spec.direction == compare::Direction::Input ? "input" : "output"},
                            {"index", row.spec.index},
                            {"data_id", row.data_id},
                            {"judged_by", row.judged_by}};
    std::string reasons;
    for (const std::string& r : row.reasons) reasons += (reasons.empty() ? "" : " ") + r;
    entry["reasons"] = reasons;
    if (row.metrics) {
      entry["cosine_similarity"] = row.metrics->cosine_similarity;
      entry["max_absolute_error"] = row.metrics->max_absolute_error;
      entry["max_relative_error"] = row.metrics->max_relative_error;
    }
    table.push_back(entry);
  }
  return table;
}

RecordedComparison compare_and_record(const StepContext& context, const std::string& golden, const std::string& target,
                                      const std::optional<std::string>& referee, const std::string& out_dir,
                                      const std::string& what) {
  const ComparisonSettings& settings = comparison_settings(context);
  RecordedComparison record;
  compare::CompareOptions& options = record.options;
  options.golden_path = golden;
  options.my_path = target;
  options.referee_path = referee;
  options.rank = settings.rank;
  options.tolerances = settings.tolerances;

  record.reproduce = "diagnose compare -gp " + shell_quote(golden) + " -mp " + shell_quote(target);
  if (referee) record.reproduce += " --referee " + shell_quote(*referee);
  record.reproduce += settings.compare_options();

  compare::CompareResult compared = compare::run_compare(options);
  if (!compared.fatal_error.empty()) {
    record.error = compared.fatal_error;
    return record;
  }
  std::string prefix = what.empty() ? "" : what + ": ";
  fs::create_directories(out_dir);
  std::vector<std::string> csv_paths = compare::write_csv_reports(compared, out_dir);
  std::string json_path = out_dir + "/result.json";
  record.document = compare::result_to_json(compared, options, csv_paths);
  std::ofstream(json_path) << record.document.dump(2) << "\n";
  for (const std::string& csv : csv_paths)
    record.evidence.push_back({"file", prefix + "comparison table", csv, nullptr});
  record.evidence.push_back({"file", prefix + "comparison result (JSON)", json_path, nullptr});
  record.compared = std::move(compared);
  return record;
}

namespace {

// `compared` without the rows of `artifacts`: those judged NotJudged, so that no divergence, call
// or localisation rests on them.
compare::CompareResult without_artifacts(const compare::CompareResult& compared,
                                         const std::vector<SuspectedArtifact>& artifacts) {
  compare::CompareResult kept;
  kept.groups = compared.groups;
  for (compare::RowGroup& group : kept.groups)
    for (compare::Row& row : group.rows)
      if (row.verdict == compare::Verdict::Fail && is_suspected_artifact(artifacts, row.spec))
        row.verdict = compare::Verdict::NotJudged;
  kept.summary.divergences = compare::find_divergences(kept.groups);
  return kept;
}

// judge_dumps of a comparison made already. With `finals`, the comparison of the same runs' final
// outputs and state: the rows they contradict are suspected dump artifacts (dump_consistency.h),
// and when they fail, the first diverging call is theirs.
DumpJudgement judge_recorded(const StepContext& context, RecordedComparison record, const std::string& golden,
                             const std::string& target, const std::string& out_dir, const std::string& what,
                             const compare::CompareResult* finals = nullptr) {
  DumpJudgement judgement;
  StepResult& result = judgement.result;
  result.reproduce.push_back(record.reproduce);
  std::string prefix = what.empty() ? "" : what + ": ";
  if (!record.error.empty()) {
    result = error_result(prefix + "cannot compare: " + record.error, std::move(result));
    return judgement;
  }
  result.evidence = std::move(record.evidence);
  const compare::CompareResult& compared = *record.compared;
  const std::vector<SuspectedArtifact> artifacts =
      finals ? suspected_dump_artifacts(compared, *finals) : std::vector<SuspectedArtifact>();
  const compare::CompareResult filtered =
      artifacts.empty() ? compare::CompareResult() : without_artifacts(compared, artifacts);
  const compare::CompareResult& consistent = artifacts.empty() ? compared : filtered;

  const compare::CompareSummary& s = compared.summary;
  result.metrics = {{"rows", s.rows},
                    {"compared", s.compared},
                    {"passed", s.passed},
                    {"failed", s.failed},
                    {"not_comparable", s.not_comparable},
                    {"unmatched", s.unmatched.size()},
                    {"localized", op_row_fails(consistent)}};
  // Op-level divergences (inside a graph) before the final outputs' one, which has no graph
  // and whose "source" is the output itself: the culprit is the op where the error starts.
  std::vector<compare::Divergence> divergences = consistent.summary.divergences;
  std::stable_sort(
      divergences.begin(), divergences.end(),
      [](const compare::Divergence& a, const compare::Divergence& b) { return a.graph >= 0 && b.graph < 0; });
  nlohmann::json source_ops = nlohmann::json::array();
  auto origin = [&](const std::string& op) {
    const std::string text = origin_text(compared, op);
    return text.empty() ? "" : "; " + text;
  };
  // With several calls, the divergences of the first diverging call stand for the later ones (the
  // summary says which calls diverge): the final outputs' and state's first when they fail.
  const CallJudgement calls = judge_calls(consistent, record.options.tolerances);
  std::optional<int64_t> first_call = calls.first_diverging_step();
  if (finals && finals->summary.failed > 0)
    if (std::optional<int64_t> outputs_first = judge_calls(*finals, record.options.tolerances).first_diverging_step()) {
      first_call = outputs_first;
      const bool op_rows_of_call = std::any_of(calls.calls.begin(), calls.calls.end(),
                                               [&](const CallOutcome& c) { return c.step == *first_call; });
      if (!op_rows_of_call)
        result.findings.push_back({prefix + "no op row of " + call_name(*first_call) +
                                       " was judged, where the final outputs first diverge: dump that call "
                                       "(`dump.steps: [" +
                                       std::to_string(*first_call) + "]`, calls numbered from 0) to localise it",
                                   ""});
    }
  for (const SuspectedArtifact& artifact : artifacts) result.findings.push_back({prefix + artifact.reason(), ""});
  if (!artifacts.empty()) {
    result.metrics["suspected_artifacts"] = nlohmann::json::array();
    for (const SuspectedArtifact& artifact : artifacts)
      result.metrics["suspected_artifacts"].push_back(artifact.to_json());
  }
  for (const compare::Divergence& d : divergences) {
    if (first_call && d.token_id != *first_call) continue;
    std::string where = (d.rank >= 0 ? " rank " + std::to_string(d.rank) : "") +
                        (d.graph >= 0 ? " graph " + std::to_string(d.graph) : "") +
                        (calls.calls.size() > 1 ? " call " + std::to_string(d.token_id + 1) : "");
    result.findings.push_back({prefix + "first failing " + row_kind(compared, d.first_failing_op) + where + ": " +
                                   d.first_failing_op + failure_detail(compared, d.first_failing_op) +
                                   origin(d.first_failing_op),
                               d.first_failing_op});
    for (size_t i = 0; i < d.source_ops.size(); ++i) {
      const std::string& op = d.source_ops[i];
      if (row_kind(compared, op) == "op")
        result.findings.push_back(
            {prefix + "error starts at op " + op + " (" +
                 compare::source_inputs_text(i < d.source_inputs.size() ? d.source_inputs[i]
                                                                        : compare::SourceInputs::NotDumped) +
                 ")" + failure_detail(compared, op) + origin(op),
             op});
      source_ops.push_back(op);
    }
  }
  result.metrics["first_failing_op"] =
      divergences.empty() ? nlohmann::json() : nlohmann::json(divergences.front().first_failing_op);
  if (calls.calls.size() > 1) result.metrics["calls"] = calls.to_json();
  result.metrics["source_ops"] = source_ops;
  const std::vector<int> ranks = failing_ranks(divergences);
  if (!ranks.empty()) result.metrics["failing_ranks"] = ranks;
  const std::optional<RankAgreement> agreement = compare_ranks(golden, target, record.options, compared);
  if (agreement) {
    result.metrics["rank_agreement"] = agreement->to_json();
    if (agreement->first && !agreement->first->final_output) result.metrics["localized"] = true;
    result.findings.push_back({prefix + "ranks compared with each other: " + agreement->text(),
                               agreement->first ? agreement->first->op : ""});
  }
  const std::optional<RankDeparture> departure = departing_rank(divergences, agreement);
  if (departure) {
    result.metrics["departing_rank"] = departure->rank;
    result.metrics["departing_op"] = departure->op;
    result.findings.insert(result.findings.begin(), {prefix + "across ranks: " + departure->text(), departure->op});
  }
  if (!s.unmatched.empty())
    result.findings.push_back({prefix + std::to_string(s.unmatched.size()) +
                                   " record(s) of one side not matched (listed in " + out_dir + "/result.json)",
                               ""});
  nlohmann::json worst = worst_rows(compared, comparison_settings(context).worst_rows);
  if (!worst.empty()) result.evidence.push_back({"table", prefix + "worst rows", "", worst});

  std::string coverage = compare::coverage_text(s);
  // A row the budget left to statistics that passed on them (not on equal hashes) had no
  // element-wise test, so it does not count towards min_judged_share; one that failed on them
  // does (a mean or an extreme off by more than the tolerance is an element off by more).
  uint64_t over_budget = 0, passed_on_statistics = 0;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (row.spec.over_budget) {
        ++over_budget;
        passed_on_statistics += row.passed_on_statistics;
      }
  result.metrics["statistics_only_over_budget"] = over_budget;
  result.metrics["passed_on_statistics_only"] = passed_on_statistics;
  if (over_budget > 0)
    coverage += "; " + std::to_string(over_budget) +
                " of them compared on statistics only: the dump's byte budget was reached (defaults.dump_budget, "
                "dump.max_bytes)";
  result.metrics["judged"] = s.compared;
  result.metrics["coverage"] = coverage;
  result.metrics["not_comparable_reasons"] = s.not_comparable_reasons;
  result.metrics["judged_by"] = s.judged_by;
  const std::string unjudged = unjudged_groups(compared);
  const double min_share = comparison_settings(context).min_judged_share;
  const uint64_t to_judge = s.rows - s.not_judged;
  const uint64_t judged_elementwise = s.compared - passed_on_statistics;
  const double share = to_judge == 0 ? 0.0 : static_cast<double>(judged_elementwise) / static_cast<double>(to_judge);
  const std::string artifact_text =
      artifacts.empty() ? "" : " (" + std::to_string(artifacts.size()) + " of them suspected dump artifacts)";
  if (!artifacts.empty() && consistent.summary.divergences.empty() && !(agreement && agreement->first)) {
    result.status = StepStatus::Error;
    result.summary =
        prefix + std::to_string(s.failed) + " of " + std::to_string(s.compared) +
        " judged rows fail, every one where its call's final outputs pass orders of magnitude closer to "
        "eager (suspected dump artifacts, listed): the dump contradicts the outputs, no op can be blamed; " +
        coverage;
  } else if (s.failed > 0 || (agreement && agreement->first)) {
    result.status = StepStatus::Fail;
    result.summary = prefix + (s.failed > 0 ? std::to_string(s.failed) + " of " + std::to_string(s.compared) +
                                                  " judged rows fail" + artifact_text
                                            : "every rank matches its golden self, yet " + agreement->text());
    if (!calls.text().empty()) result.summary += " (" + calls.text() + ")";
    if (departure && s.failed > 0) {
      result.summary += ", " + departure->text();
    } else if (!divergences.empty()) {
      const std::string& first = divergences.front().first_failing_op;
      const std::string non_finite = non_finite_of(compared, first);
      if (calls.text().empty())
        result.summary += ", first divergence at " + first + (non_finite.empty() ? "" : ": " + non_finite);
      else if (!non_finite.empty())
        result.summary += ", " + first + ": " + non_finite;
    }
    if (!ranks.empty()) result.summary += "; failing ranks: " + ranks_text(ranks);
    result.summary += "; " + coverage;
  } else if (s.compared == 0) {
    result.status = StepStatus::Error;
    result.summary = prefix + "nothing could be judged: " + coverage;
  } else if (share < min_share || !unjudged.empty()) {
    result.status = StepStatus::Error;
    std::ostringstream why;
    why << prefix << "too little was judged to say there is no problem: " << coverage;
    if (share < min_share)
      why << " (" << static_cast<int>(share * 100) << "% judged"
          << (passed_on_statistics > 0
                  ? " element-wise, " + std::to_string(passed_on_statistics) + " rows passing on their statistics alone"
                  : std::string())
          << "; min_judged_share is " << min_share << ")";
    if (!unjudged.empty()) why << "; nothing judged in " << unjudged;
    result.summary = why.str();
  } else {
    result.status = StepStatus::Pass;
    result.summary = prefix + "all pass" + (calls.text().empty() ? "" : " (" + calls.text() + ")") + "; " + coverage;
  }
  judgement.compared = std::move(record.compared);
  return judgement;
}

// The final outputs and state of the runs whose dumps `options` compared, under the same options;
// nullopt when either side is not a plugin run or they cannot be compared.
std::optional<compare::CompareResult> compare_final_outputs(compare::CompareOptions options, const std::string& golden,
                                                            const std::string& target,
                                                            const std::optional<std::string>& referee) {
  options.golden_path = final_outputs_of(golden);
  options.my_path = final_outputs_of(target);
  options.referee_path.reset();
  if (referee && !final_outputs_of(*referee).empty()) options.referee_path = final_outputs_of(*referee);
  if (options.golden_path.empty() || options.my_path.empty()) return std::nullopt;
  compare::CompareResult compared = compare::run_compare(options);
  if (!compared.fatal_error.empty()) return std::nullopt;
  return compared;
}

}  // namespace

DumpJudgement judge_dumps(const StepContext& context, const std::string& golden, const std::string& target,
                          const std::optional<std::string>& referee, const std::string& out_dir,
                          const std::string& what) {
  return judge_recorded(context, compare_and_record(context, golden, target, referee, out_dir, what), golden, target,
                        out_dir, what);
}

StepResult judge_run_dumps(const StepContext& context, const std::vector<RunRequest>& requests,
                           const std::vector<RunRecord>& runs, const std::string& golden, const std::string& target,
                           const std::optional<std::string>& referee, const std::string& failure,
                           const std::string& golden_side, std::vector<CulpritCandidate>* candidates) {
  const std::string out_dir = context.step_dir() + "/compare";
  // One comparison serves the targeted re-run (which rows fail on statistics only) and the
  // judgement, which is made once; the dumps are compared again only when the re-run filled them in.
  RecordedComparison record = compare_and_record(context, golden, target, referee, out_dir);
  std::optional<TargetedRerun> rerun;
  if (record.compared)
    if (std::vector<std::string> region = over_budget_region(*record.compared); !region.empty())
      rerun = rerun_region(context, requests, region);
  if (rerun && rerun->fill.filled > 0) record = compare_and_record(context, golden, target, referee, out_dir);
  std::optional<compare::CompareResult> finals;
  if (record.compared) finals = compare_final_outputs(record.options, golden, target, referee);
  DumpJudgement judgement =
      judge_recorded(context, std::move(record), golden, target, out_dir, "", finals ? &*finals : nullptr);
  StepResult& result = judgement.result;
  if (rerun) {
    result.metrics["targeted_rerun"] = rerun->to_json();
    result.findings.push_back({rerun->text(), ""});
  }
  judge_final_outputs(context, golden, target, referee, golden_side, result);
  std::vector<std::string> reproduce;
  for (const RunRecord& run : runs) reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
  result.reproduce.insert(result.reproduce.begin(), reproduce.begin(), reproduce.end());
  const nlohmann::json& sources = result.metrics["source_ops"];
  const nlohmann::json& departing = result.metrics["departing_op"];
  result.metrics["culprit"] = result.metrics.contains("culprit") ? result.metrics["culprit"]
                              : departing.is_string()            ? departing
                              : !sources.empty()                 ? sources[0]
                                                                 : result.metrics["first_failing_op"];
  const compare::RowSpec* culprit = judgement.compared && result.metrics["culprit"].is_string()
                                        ? row_with_nodes(*judgement.compared, result.metrics["culprit"])
                                        : nullptr;
  result.metrics["culprit_nodes"] = culprit ? culprit->fx_nodes : std::vector<std::string>();
  result.metrics["culprit_sources"] = culprit ? source_places(*culprit) : std::vector<std::string>();
  if (result.metrics.contains("differing_state")) {
    // a state culprit: the state that differs, whose in-place writes its confirmation forces
    const nlohmann::json state = result.metrics["differing_state"];
    result.metrics.erase("differing_state");
    if (candidates) {
      CulpritCandidate c;
      c.op = result.metrics["culprit"].get<std::string>();
      c.forced_writes = state["paths"].get<std::vector<std::string>>();
      c.step = state["step"].get<int64_t>();
      *candidates = {c};
    }
  } else if (candidates && judgement.compared)
    *candidates = culprit_candidates(
        *judgement.compared, result.metrics["culprit"].is_string() ? result.metrics["culprit"].get<std::string>() : "",
        finals ? suspected_dump_artifacts(*judgement.compared, *finals) : std::vector<SuspectedArtifact>());
  if (result.status == StepStatus::Fail && !result.metrics.contains("category")) {
    result.summary = failure + result.summary;
    if (culprit)
      result.summary += "; " + result.metrics["culprit"].get<std::string>() + ": " +
                        origin_text(*judgement.compared, result.metrics["culprit"]);
  }
  report_nan_origins(golden, target, result);
  return result;
}

void judge_final_outputs(const StepContext& context, const std::string& golden, const std::string& target,
                         const std::optional<std::string>& referee, const std::string& golden_side,
                         StepResult& result) {
  const std::string golden_outputs = final_outputs_of(golden), target_outputs = final_outputs_of(target);
  if (golden_outputs.empty() && target_outputs.empty()) return;  // dumps brought by the user
  std::optional<std::string> referee_outputs;
  if (referee) referee_outputs = final_outputs_of(*referee);
  if (referee_outputs && referee_outputs->empty()) referee_outputs.reset();
  DumpJudgement finals = golden_outputs.empty() || target_outputs.empty()
                             ? DumpJudgement{error_result("one side is not a run of the model"), std::nullopt}
                             : judge_dumps(context, golden_outputs, target_outputs, referee_outputs,
                                           context.step_dir() + "/compare-outputs", "final outputs");
  StepResult& f = finals.result;
  if (finals.compared) judge_state(context, *finals.compared, golden, golden_side, f);
  for (Evidence& e : f.evidence) result.evidence.push_back(std::move(e));
  for (Finding& finding : f.findings) result.findings.push_back(std::move(finding));
  for (std::string& command : f.reproduce) result.reproduce.push_back(std::move(command));
  const compare::CompareSummary* s = finals.compared ? &finals.compared->summary : nullptr;
  result.metrics["final_outputs"] = {{"rows", s ? s->rows : 0},
                                     {"judged", s ? s->compared : 0},
                                     {"failed", s ? s->failed : 0},
                                     {"summary", f.summary}};
  for (const char* key : {"calls", "rank_agreement"})
    if (f.metrics.contains(key)) result.metrics["final_outputs"][key] = f.metrics[key];
  const bool all_judged = s && s->rows > 0 && s->compared == s->rows;
  if (f.status == StepStatus::Fail && f.metrics.contains("category")) {
    result.status = StepStatus::Fail;
    result.summary = f.summary + "; ops: " + result.summary;
    for (const char* key : {"category", "culprit", "differing_state"}) result.metrics[key] = f.metrics[key];
  } else if (f.status == StepStatus::Fail) {
    const bool ops_failed = result.status == StepStatus::Fail;
    result.status = StepStatus::Fail;
    result.summary = ops_failed ? result.summary + "; " + f.summary : f.summary + "; ops: " + result.summary;
  } else if (result.status == StepStatus::Fail) {
    result.summary += "; " + f.summary;
  } else if (!all_judged) {
    result.status = StepStatus::Error;
    result.summary =
        "the final outputs were not all judged, so no verdict: " + (s ? compare::coverage_text(*s) : f.summary) +
        "; ops: " + result.summary;
  } else if (result.status == StepStatus::Pass) {
    result.summary += "; " + f.summary;
  }
}

}  // namespace diagnose
