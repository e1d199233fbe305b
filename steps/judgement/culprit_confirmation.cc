#include "steps/judgement/culprit_confirmation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <boost/filesystem.hpp>

#include "compare/evaluate.h"
#include "compare/npy.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/util/files.h"
#include "runspec/plugin_status.h"
#include "steps/judgement/call_judgement.h"
#include "steps/judgement/dump_judgement.h"

namespace diagnose {

namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(2);
  out << value;
  return out.str();
}

// How far a comparison of final outputs and state is from the right values: its largest rmse to
// float64 when every judged row has its truth, else its largest rmse to the golden.
struct OutputsDistance {
  uint64_t rows = 0, judged = 0, failed = 0;
  double rmse = 0;
  bool to_truth = true;
  std::string failing_calls;  // "calls 2–5"; "" for one call

  nlohmann::json to_json() const {
    return {{"rows", rows},
            {"judged", judged},
            {"failed", failed},
            {"rmse", std::isfinite(rmse) ? nlohmann::json(rmse) : nlohmann::json()},
            {"rmse_to", to_truth ? "float64" : "golden"},
            {"failing_calls", failing_calls}};
  }
};

OutputsDistance outputs_distance(const compare::CompareResult& compared, const compare::Tolerances& tolerances) {
  OutputsDistance d;
  d.rows = compared.summary.rows - compared.summary.not_judged;
  d.judged = compared.summary.compared;
  d.failed = compared.summary.failed;
  d.failing_calls = judge_calls(compared, tolerances).failing_calls_text();
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (row.verdict != compare::Verdict::NotJudged && !row.referee_rmse_mine) d.to_truth = false;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) {
      if (row.verdict == compare::Verdict::NotJudged) continue;
      const double rmse = d.to_truth                         ? *row.referee_rmse_mine
                          : row.metrics && row.metrics_valid ? row.metrics->rmse
                                                             : std::numeric_limits<double>::infinity();
      d.rmse = std::max(d.rmse, std::isnan(rmse) ? std::numeric_limits<double>::infinity() : rmse);
    }
  return d;
}

// "rmse to float64 3.1e-03 → 2.0e-07"
std::string rmse_change(const OutputsDistance& before, const OutputsDistance& after) {
  return std::string("rmse to ") + (before.to_truth && after.to_truth ? "float64 " : "eager ") + number(before.rmse) +
         " → " + number(after.rmse);
}

// The intervention run's status.json and the graph nodes it compiled; `error` says why they
// cannot be read.
struct InterventionStatus {
  nlohmann::json status;
  std::set<std::string> compiled;
  std::string error;
};

InterventionStatus read_intervention_status(const std::string& run_dir) {
  const std::string path = plugin_status_path(run_dir);
  const std::optional<std::string> text = read_file(path);
  InterventionStatus run;
  run.status = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!run.status.is_object()) {
    run.error = "the run left no readable status.json";
    return run;
  }
  try {
    for (std::string& node : fired_rules_in_status(run.status, path).value_or(std::vector<std::string>()))
      run.compiled.insert(std::move(node));
  } catch (const std::runtime_error& e) {
    run.error = e.what();
  }
  return run;
}

// The nodes of `candidate` that the intervention run did not run eagerly, with why; "" when
// it ran every one of them eagerly (status.json's isolation: nodes, compiled).
std::string not_run_eagerly(const CulpritCandidate& candidate, const std::string& run_dir) {
  const InterventionStatus run = read_intervention_status(run_dir);
  if (!run.error.empty()) return run.error;
  std::set<std::string> known;
  for (const IsolatedNode& node : parse_plugin_status(run.status).isolated_nodes) known.insert(node.id);
  const std::set<std::string>& compiled = run.compiled;
  std::vector<std::string> missing, kept;
  for (const std::string& node : candidate.graph_nodes) {
    if (!known.count(node)) missing.push_back(node);
    if (compiled.count(node)) kept.push_back(node);
  }
  if (!missing.empty()) return "the run's graphs have no node " + joined(missing);
  if (!kept.empty()) return "the run compiled " + joined(kept) + " even when asked to run it eagerly";
  return "";
}

// The nodes that wrote `candidate`'s forced_writes in place in the intervention run, put in
// `nodes`; "" when each piece of state had at least one and all ran eagerly, else why not
// (status.json's isolation: forced_writes, compiled).
std::string forced_write_nodes(const CulpritCandidate& candidate, const std::string& run_dir,
                               std::vector<std::string>& nodes) {
  const InterventionStatus run = read_intervention_status(run_dir);
  if (!run.error.empty()) return run.error;
  const nlohmann::json isolation = run.status.value("isolation", nlohmann::json());
  const nlohmann::json forced = isolation.is_object() ? isolation.value("forced_writes", nlohmann::json()) : nullptr;
  if (!forced.is_object()) return "its status.json says nothing of the writes it forced (isolation.forced_writes)";
  const std::set<std::string>& compiled = run.compiled;
  std::vector<std::string> unwritten, kept;
  for (const std::string& state : candidate.forced_writes) {
    const nlohmann::json writers = forced.value(state, nlohmann::json::array());
    if (!writers.is_array() || writers.empty()) unwritten.push_back(state);
    for (const nlohmann::json& node : writers.is_array() ? writers : nlohmann::json::array()) {
      if (!node.is_string()) continue;
      nodes.push_back(node.get<std::string>());
      if (compiled.count(nodes.back())) kept.push_back(nodes.back());
    }
  }
  if (!unwritten.empty()) return "no node of the run's graphs writes " + joined(unwritten) + " in place";
  if (!kept.empty()) return "the run compiled " + joined(kept) + " even when asked to run it eagerly";
  return "";
}

bool subset_of(const std::vector<std::string>& nodes, const std::vector<std::vector<std::string>>& rejected) {
  return std::any_of(rejected.begin(), rejected.end(), [&](const std::vector<std::string>& r) {
    return std::all_of(nodes.begin(), nodes.end(),
                       [&](const std::string& n) { return std::find(r.begin(), r.end(), n) != r.end(); });
  });
}

std::string named(const CulpritCandidate& c) {
  if (!c.forced_writes.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& state : c.forced_writes) quoted.push_back("`" + state + "`");
    return "the in-place writes of " + joined(quoted) +
           (c.graph_nodes.empty() ? "" : " (graph nodes " + joined(c.graph_nodes) + ")");
  }
  std::vector<std::string> about;
  if (!c.graph_nodes.empty()) about.push_back("graph nodes " + joined(c.graph_nodes));
  if (!c.producer_of.empty())
    about.push_back("a buffer the alignment left unmapped that `" + c.producer_of + "` reads");
  return "`" + c.op + "`" + (about.empty() ? "" : " (" + joined(about, "; ") + ")");
}

// The status.json of `rank` in a run directory, an empty object when it cannot be read.
nlohmann::json status_of_rank(const std::string& run_dir, int rank) {
  const std::optional<std::string> text = read_file(plugin_status_path(run_dir, rank));
  nlohmann::json status = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  return status.is_object() ? status : nlohmann::json::object();
}

std::vector<std::string> strings_in(const nlohmann::json& list) {
  std::vector<std::string> found;
  if (list.is_array())
    for (const nlohmann::json& item : list)
      if (item.is_string()) found.push_back(item.get<std::string>());
  return found;
}

// The unmapped producer in `status` of the buffers `reader` reads: the inductor_unmapped entries with
// a reason and graph_nodes, of each graph where `reader` fails, whose read_by names it; nullopt when none.
std::optional<CulpritCandidate> unmapped_producer(const CulpritCandidate& reader, const nlohmann::json& status) {
  const nlohmann::json unmapped = status.value("inductor_unmapped", nlohmann::json::object());
  if (!unmapped.is_object()) return std::nullopt;
  std::vector<int> graphs = {reader.graph};
  for (int graph : reader.failing_graphs)
    if (std::find(graphs.begin(), graphs.end(), graph) == graphs.end()) graphs.push_back(graph);
  std::optional<CulpritCandidate> found;
  for (int graph : graphs) {
    const nlohmann::json entries = unmapped.value(std::to_string(graph), nlohmann::json::array());
    for (const nlohmann::json& entry : entries.is_array() ? entries : nlohmann::json::array()) {
      if (!entry.is_object() || !entry.contains("reason")) continue;
      const std::vector<std::string> readers = strings_in(entry.value("read_by", nlohmann::json()));
      const std::vector<std::string> graph_nodes = strings_in(entry.value("graph_nodes", nlohmann::json()));
      if (graph_nodes.empty() || std::find(readers.begin(), readers.end(), reader.op) == readers.end()) continue;
      if (!found) {
        CulpritCandidate& c = found.emplace();
        c.op = entry.value("buffer", std::string("buffer")) + " of " + graph_nodes.back();
        c.fx_nodes = strings_in(entry.value("fx_nodes", nlohmann::json()));
        compare::RowSpec places;
        const nlohmann::json sources = entry.value("sources", nlohmann::json());
        for (const nlohmann::json& source : sources.is_array() ? sources : nlohmann::json::array())
          if (source.is_object())
            places.sources.push_back({source.value("node", std::string()), source.value("module", std::string()),
                                      source.value("custom_op", std::string()), source.value("line", std::string()),
                                      source.value("code", std::string())});
        c.sources = source_places(places);
        c.rank = reader.rank;
        c.graph = reader.graph;
        c.step = reader.step;
        c.producer_of = reader.op;
      }
      for (const std::string& node : graph_nodes)
        if (std::find(found->graph_nodes.begin(), found->graph_nodes.end(), node) == found->graph_nodes.end())
          found->graph_nodes.push_back(node);
    }
  }
  return found;
}

}  // namespace

const char* const kGeOpUnconfirmable =
    "a TorchAir GE op that no map beside its dump ties to the graph Dynamo hands the backend "
    "(diagnose_graph_nodes_rank_<R>.json, which the plugin's TorchAir dump runs write, is missing, as for a dump "
    "the user brought, or lacks its ATen node): GE names only a node of the ATen graph TorchAir traces inside its "
    "own backend (_fx_tensor_name), which no run spec can name";

std::vector<CulpritCandidate> culprit_candidates(const compare::CompareResult& compared, const std::string& culprit,
                                                 const std::vector<SuspectedArtifact>& artifacts) {
  std::vector<CulpritCandidate> found, suspected;
  const compare::Row* first = nullptr;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows)
      if (!first && row.verdict == compare::Verdict::Fail && row.spec.op_key == culprit &&
          !is_suspected_artifact(artifacts, row.spec))
        first = &row;
  const bool ge_dump =
      compared.my_kind == compare::DumpKind::GeDump || compared.my_kind == compare::DumpKind::GeDumpFile;
  auto add = [ge_dump, &compared](std::vector<CulpritCandidate>& list, const compare::Row& row, bool artifact) {
    for (const CulpritCandidate& c : list)
      if (c.op == row.spec.op_key) return;
    CulpritCandidate& c = list.emplace_back();
    c.op = row.spec.op_key;
    c.graph_nodes = row.spec.graph_nodes;
    c.fx_nodes = row.spec.fx_nodes;
    c.sources = source_places(row.spec);
    c.rank = row.spec.rank;
    c.graph = row.spec.graph;
    c.step = row.spec.token_id;
    c.suspected_artifact = artifact;
    c.ge_op = ge_dump;
    for (const compare::RowGroup& group : compared.groups)
      for (const compare::Row& other : group.rows)
        if (other.verdict == compare::Verdict::Fail && other.spec.op_key == c.op && other.spec.rank == c.rank &&
            std::find(c.failing_graphs.begin(), c.failing_graphs.end(), other.spec.graph) == c.failing_graphs.end())
          c.failing_graphs.push_back(other.spec.graph);
    c.row = row;
  };
  if (first) add(found, *first, false);
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) {
      const compare::RowSpec& s = row.spec;
      if (row.verdict != compare::Verdict::Fail || s.final_output || s.state) continue;
      if (is_suspected_artifact(artifacts, s)) {
        add(suspected, row, true);
      } else if (first && s.rank == first->spec.rank && s.token_id == first->spec.token_id) {
        add(found, row, false);
      }
    }
  std::vector<CulpritCandidate>& chosen = found.empty() ? suspected : found;
  if (chosen.size() > kMaxConfirmationRuns) chosen.resize(kMaxConfirmationRuns);
  return chosen;
}

std::vector<CulpritCandidate> with_unmapped_producers(const std::vector<CulpritCandidate>& candidates,
                                                      const std::string& run_dir) {
  std::vector<CulpritCandidate> chosen;
  for (const CulpritCandidate& c : candidates) {
    chosen.push_back(c);
    if (c.ge_op || c.graph < 0 || !c.forced_writes.empty()) continue;
    std::optional<CulpritCandidate> producer = unmapped_producer(c, status_of_rank(run_dir, c.rank));
    if (producer &&
        std::none_of(chosen.begin(), chosen.end(), [&](const CulpritCandidate& o) { return o.op == producer->op; }))
      chosen.push_back(std::move(*producer));
  }
  if (chosen.size() > kMaxConfirmationRuns) chosen.resize(kMaxConfirmationRuns);
  return chosen;
}

Observation judge_observed_value(const CulpritCandidate& candidate, const std::string& run_dir,
                                 const compare::Tolerances& tolerances) {
  Observation seen;
  if (!candidate.row || candidate.observe.empty()) {
    seen.error = "no node of it was observed";
    return seen;
  }
  const std::string path = run_dir + "/observed/" + candidate.observe + "/" + std::to_string(candidate.step) + ".npy";
  if (!boost::filesystem::exists(path)) {
    seen.error = "the run recorded no value of " + candidate.observe + " at call " + std::to_string(candidate.step + 1);
    return seen;
  }
  compare::RowSpec spec = candidate.row->spec;
  if (spec.golden_recorded) {
    seen.error = "the golden run kept statistics only of its row";
    return seen;
  }
  const compare::DType declared =
      spec.mine ? (spec.mine->declared_dtype != compare::DType::Unknown ? spec.mine->declared_dtype : spec.mine->dtype)
                : compare::DType::Unknown;
  spec.mine = compare::read_npy(path);
  if (spec.mine->declared_dtype == compare::DType::Unknown && declared != spec.mine->dtype)
    spec.mine->declared_dtype = declared;
  spec.my_path = path;
  spec.my_recorded.reset();
  spec.over_budget = false;
  seen.row = compare::evaluate_rows({spec}, tolerances, 1).front();
  return seen;
}

std::string unconfirmed_candidates(const std::vector<std::string>& named) {
  return "the op rows point at " + joined(named) +
         (named.size() == 1 ? ", an unconfirmed candidate" : ", unconfirmed candidates") + ", not a culprit";
}

void confirm_culprit(const StepContext& context, const std::vector<CulpritCandidate>& candidates,
                     const ConfirmationSides& sides, const InterventionRun& intervention, StepResult& result) {
  const compare::Tolerances& tolerances = comparison_settings(context).tolerances;
  const std::string dir = context.step_dir() + "/confirm";
  const RecordedComparison before_record =
      compare_and_record(context, sides.golden_outputs, sides.before_outputs, sides.referee_outputs, dir + "/before");
  std::optional<OutputsDistance> before;
  if (before_record.compared) before = outputs_distance(*before_record.compared, tolerances);

  nlohmann::json attempts = nlohmann::json::array();
  std::vector<std::vector<std::string>> rejected;
  std::vector<std::string> texts;
  std::optional<CulpritCandidate> confirmed;
  size_t runs = 0;
  nlohmann::json shown;  // the attempt the confirmation reports: the confirmed one, else the last run
  for (CulpritCandidate c : candidates) {
    const bool state = !c.forced_writes.empty();
    nlohmann::json attempt = {{"candidate", c.op},
                              {"graph_nodes", c.graph_nodes},
                              {"call", c.step + 1},
                              {"run", nullptr},
                              {"suspected_artifact", c.suspected_artifact}};
    if (c.rank >= 0) attempt["rank"] = c.rank;
    if (!c.producer_of.empty()) attempt["producer_of"] = c.producer_of;
    auto unconfirmable = [&](const std::string& why) {
      attempt["outcome"] = "unconfirmable";
      attempt["reason"] = why;
      texts.push_back(named(c) + " cannot be confirmed: " + why);
      attempts.push_back(attempt);
      if (shown.is_null()) shown = attempt;
    };
    if (!before) {
      unconfirmable("the final outputs without intervention cannot be compared: " + before_record.error);
      continue;
    }
    if (state) attempt["forced_writes"] = c.forced_writes;
    if (c.graph_nodes.empty() && !state) {
      unconfirmable(c.ge_op
                        ? kGeOpUnconfirmable
                        : "its dump record names no Dynamo-graph node (graph_nodes) that a run could execute eagerly");
      continue;
    }
    // a masked defect: the run observes the candidate's own value where that node runs eagerly
    const std::string& value_of = c.row ? c.row->spec.golden_value_of : std::string();
    if (!state && before->failed == 0 &&
        std::find(c.graph_nodes.begin(), c.graph_nodes.end(), value_of) != c.graph_nodes.end())
      c.observe = value_of;
    if (!state && subset_of(c.graph_nodes, rejected)) {
      unconfirmable("its graph nodes were run eagerly already, with a rejected candidate");
      continue;
    }
    if (runs >= kMaxConfirmationRuns) break;
    const std::string name = "confirm-" + std::to_string(++runs);
    const RunRequest request = intervention(name, c);
    const RunRecord record = context.run({request}).front();
    attempt["run"] = name;
    result.reproduce.push_back(reproduce_command(record.cwd, record.env, record.argv));
    if (record.status != RunStatus::Succeeded) {
      unconfirmable("the intervention run " + name + " did not succeed: " + record.error);
      shown = attempt;
      continue;
    }
    if (const std::string why =
            state ? forced_write_nodes(c, record.dir, c.graph_nodes) : not_run_eagerly(c, record.dir);
        !why.empty()) {
      unconfirmable("in intervention run " + name + ", " + why);
      shown = attempt;
      continue;
    }
    attempt["graph_nodes"] = c.graph_nodes;
    RecordedComparison after_record = compare_and_record(
        context, sides.golden_outputs, record.dir + "/outputs", sides.referee_outputs, dir + "/" + name,
        "final outputs with " +
            (state ? "the writes of " + joined(c.forced_writes) + " forced" : c.op + " run eagerly"));
    if (!after_record.compared) {
      unconfirmable("its final outputs cannot be compared: " + after_record.error);
      shown = attempt;
      continue;
    }
    for (Evidence& e : after_record.evidence) result.evidence.push_back(std::move(e));
    const OutputsDistance after = outputs_distance(*after_record.compared, tolerances);
    attempt["before"] = before->to_json();
    attempt["after"] = after.to_json();
    std::string text;
    bool ok = false;
    if (after.judged < after.rows) {
      unconfirmable("intervention run " + name + "'s final outputs were not all judged");
      shown = attempt;
      continue;
    } else if (before->failed > 0) {
      ok = after.failed == 0;
      const std::string failing = before->failing_calls.empty() ? "the final outputs" : before->failing_calls;
      text = "with " + named(c) + (state ? " forced (run eagerly" : " run eagerly") + ", the rest compiled" +
             (state ? "), the outputs and state of " : ", ") + failing + (ok ? " match eager" : " still diverge") +
             (state ? " (failing output and state rows " : " (failing output rows ") + std::to_string(before->failed) +
             " → " + std::to_string(after.failed) + "; " + rmse_change(*before, after) + ")";
    } else if (const Observation seen = judge_observed_value(c, record.dir, tolerances); seen.row) {
      const compare::Row& row = *seen.row;
      ok = row.verdict == compare::Verdict::Pass && after.failed == 0;
      const bool truth = row.referee_rmse_mine && c.row->referee_rmse_mine && row.referee_rmse_golden;
      attempt["observed"] = {{"node", c.observe},
                             {"verdict", compare::verdict_name(row.verdict)},
                             {"rmse_before", truth ? nlohmann::json(*c.row->referee_rmse_mine) : nlohmann::json()},
                             {"rmse_after", truth ? nlohmann::json(*row.referee_rmse_mine) : nlohmann::json()},
                             {"rmse_eager", truth ? nlohmann::json(*row.referee_rmse_golden) : nlohmann::json()},
                             {"rmse_to", truth ? "float64" : nullptr}};
      text = "with " + named(c) + " run eagerly, the rest compiled, its value (" + c.observe + "'s output, call " +
             std::to_string(c.step + 1) + ") " + (ok ? "now passes" : "still fails") +
             (truth ? " against float64 (rmse to float64 " + number(*c.row->referee_rmse_mine) + " → " +
                          number(*row.referee_rmse_mine) + ", eager's " + number(*row.referee_rmse_golden) + ")"
                    : " against eager") +
             (after.failed == 0 ? "; the final outputs pass either way ("
                                : "; but the final outputs now fail (failing output rows 0 → " +
                                      std::to_string(after.failed) + "; ") +
             rmse_change(*before, after) + ")";
    } else {
      ok = before->rmse > 0 && after.rmse * kMaskedDrop <= before->rmse;
      text = "with " + named(c) + " run eagerly, the rest compiled, the final outputs (which pass) come " +
             (ok ? "at least " + number(kMaskedDrop) + "× closer to" : "no " + number(kMaskedDrop) + "× closer to") +
             (before->to_truth && after.to_truth ? " float64" : " eager") + " (" + rmse_change(*before, after) +
             "; its own value not observed: " + seen.error + ")";
    }
    attempt["outcome"] = ok ? "confirmed" : "rejected";
    text = (ok ? "confirmed: " : "rejected: ") + text;
    if (!ok)
      text += (c.suspected_artifact ? ": a dump artifact, not the culprit"
               : state              ? ": the lost writes do not explain the failure alone"
                                    : ": not the culprit alone");
    attempt["text"] = text;
    texts.push_back(text);
    attempts.push_back(attempt);
    shown = attempt;
    if (ok) {
      confirmed = c;
      break;
    }
    rejected.push_back(c.graph_nodes);
  }

  // the confirmed attempt leads; the rejected ones before it follow
  std::string tried = joined(texts, "; ");
  if (confirmed) {
    const std::string last = texts.back();
    texts.pop_back();
    tried = last + (texts.empty() ? "" : " (before it, " + joined(texts, "; ") + ")");
  }
  std::string outcome = confirmed ? "confirmed" : "unconfirmable";
  for (const nlohmann::json& a : attempts)
    if (!confirmed && a.value("outcome", "") == "rejected") outcome = "rejected";
  nlohmann::json confirmation = {{"outcome", outcome},   {"runs", runs},
                                 {"candidate", nullptr}, {"graph_nodes", nlohmann::json::array()},
                                 {"run", nullptr},       {"before", before ? before->to_json() : nlohmann::json()},
                                 {"after", nullptr},     {"text", tried},
                                 {"attempts", attempts}};
  if (shown.is_object())
    for (const char* key : {"candidate", "graph_nodes", "forced_writes", "run", "after"})
      if (shown.contains(key)) confirmation[key] = shown[key];
  result.metrics["confirmation"] = confirmation;
  // a state culprit keeps what the state comparison said of it (localized: whether op rows localise it)
  const bool state = !candidates.empty() && !candidates.front().forced_writes.empty();
  if (confirmed) {
    result.metrics["culprit"] = confirmed->op;
    if (!state) {
      result.metrics["culprit_nodes"] = confirmed->fx_nodes;
      result.metrics["culprit_sources"] = confirmed->sources;
      result.metrics["localized"] = true;
    }
    if (result.status == StepStatus::Error) result.status = StepStatus::Fail;
    const std::string text = "culprit " + tried;
    result.summary += "; " + text;
    result.findings.insert(result.findings.begin(), {text, confirmed->op});
    return;
  }
  // Withdrawn: the next steps (fusion_bisect, subgraph_isolate) search as for a failure no op explains,
  // and the step claims no localised defect (a later step that finds one decides the verdict).
  result.metrics["culprit"] = nullptr;
  if (!state) {
    result.metrics["localized"] = false;
    result.metrics["category"] = kUnconfirmedDivergence;
  }
  std::vector<std::string> unconfirmed;
  for (const CulpritCandidate& c : candidates) unconfirmed.push_back(named(c));
  const std::string text = "no culprit confirmed by intervention (" +
                           (texts.empty() ? std::string("no candidate") : joined(texts, "; ")) +
                           (state                ? "): the differing state is not shown to cause the failure"
                            : candidates.empty() ? "): the op rows localise no culprit"
                                                 : "): " + unconfirmed_candidates(unconfirmed));
  result.summary += "; " + text;
  result.findings.insert(result.findings.begin(), {text, ""});
}

}  // namespace diagnose
