// `single_op_check`: every distinct op of an eager run, compiled alone as a one-op graph
// with the target's backend and switches on the op's recorded inputs, against the eager op
// on the same inputs. Ops go in batches, one process each, in parallel; when a process
// dies, the op it was on is reported as crashed and the rest of its batch runs again. Each
// op's compile and run seconds, as the plugin measured them, go into the report, and each
// batch's seconds beside its ops' (the rest is its process starting, setting up and ending).
// With Inductor a process first compiles many one-op graphs at once, each as it compiles alone;
// the summary says how many ops that settled and how many were compiled alone.
#include <algorithm>
#include <boost/filesystem.hpp>
#include <map>
#include <set>
#include <sstream>

#include "orchestrator/engine/progress.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/util/log_tail.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"
#include "steps/single_op/single_op_batches.h"
#include "steps/single_op/single_op_rules.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;

// "K skipped (random: a, b; no tensor output: c)": the ops not checked, by reason.
std::string skipped_clause(const std::vector<SkippedOp>& skipped) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
  for (const SkippedOp& op : skipped) {
    auto group = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& g) { return g.first == op.reason; });
    if (group == by_reason.end()) group = by_reason.insert(by_reason.end(), {op.reason, {}});
    group->second.push_back(op.op);
  }
  std::vector<std::string> groups;
  for (const auto& [reason, ops] : by_reason) groups.push_back(reason + ": " + joined(ops, ", "));
  return std::to_string(skipped.size()) + " skipped (" + joined(groups, "; ") + ")";
}

long long compile_count(const std::map<std::string, OpCost>& costs) {
  long long compiles = 0;
  for (const auto& [op, cost] : costs) compiles += cost.compiles;
  return compiles;
}

// The measured ops in inventory order: [{"op", "compile_s", "run_s", "compiles", "shared_compiles",
// "settled_in_batched_compile"}].
nlohmann::json op_times_table(const std::vector<std::string>& ops, const std::map<std::string, OpCost>& costs) {
  nlohmann::json table = nlohmann::json::array();
  for (const std::string& op : ops)
    if (auto cost = costs.find(op); cost != costs.end())
      table.push_back({{"op", op},
                       {"compile_s", cost->second.compile_s},
                       {"run_s", cost->second.run_s},
                       {"compiles", cost->second.compiles},
                       {"shared_compiles", cost->second.shared_compiles},
                       {"settled_in_batched_compile", cost->second.settled_in_batched_compile}});
  return table;
}

// "14 compiles, 30.2s compiling, 0.3s running (slowest: aten.gelu.default 3.1s, ...)"; the
// compiles count the batched ones, each op's compile seconds its share of them.
std::string cost_clause(const std::map<std::string, OpCost>& costs, long long batched_compiles) {
  constexpr size_t kSlowest = 3;
  double compiling = 0, running = 0;
  std::vector<std::pair<double, std::string>> slowest;
  for (const auto& [op, cost] : costs) {
    compiling += cost.compile_s;
    running += cost.run_s;
    slowest.push_back({cost.compile_s + cost.run_s, op});
  }
  std::stable_sort(slowest.begin(), slowest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  slowest.resize(std::min(slowest.size(), kSlowest));
  std::vector<std::string> named;
  for (const auto& [seconds, op] : slowest) named.push_back(op + " " + seconds_text(seconds));
  return std::to_string(compile_count(costs) + batched_compiles) + " compiles, " + seconds_text(compiling) +
         " compiling, " + seconds_text(running) + " running (slowest: " + joined(named, ", ") + ")";
}

// The step's keys.
struct SingleOpCheckOptions : ComparingOptions {
  std::optional<std::string> from;  // an eager run directory, instead of running the model
  RunOverrides eager, target;       // of the eager run and of the configuration under test
  size_t batches = 1;
  bool attribute_rules = true;
  RuleSearchOptions rule_search;
};

// The eager run the ops and their inputs are taken from.
RunSpec ops_source_spec(const StepContext& context, const SingleOpCheckOptions& o) {
  return side_spec(context, o.eager, kEagerAtenRun);
}

// One evaluation, phase by phase: each phase adds to the result; one that cannot go on returns
// the step's error.
class SingleOpCheck {
 public:
  SingleOpCheck(const StepContext& context, const SingleOpCheckOptions& o) : context_(context), o_(o) {}

  StepResult run() {
    if (std::optional<StepResult> error = take_eager_run()) return *error;
    if (std::optional<StepResult> error = list_ops()) return *error;
    target_ = side_spec(context_, o_.target, RunSpec());
    write_switches_file();
    if (std::optional<StepResult> error = run_batches()) return *error;
    if (std::optional<StepResult> error = judge_batches()) return *error;
    report_failed_ops();
    report_unchecked_ops();
    conclude();
    return std::move(result_);
  }

 private:
  // The eager run the ops and their inputs come from: `from`, or one made now.
  std::optional<StepResult> take_eager_run() {
    if (o_.from) {
      eager_dir_ = context_.path(*o_.from);
      return std::nullopt;
    }
    RunRequest eager = plugin_run(context_, "eager", ops_source_spec(context_, o_), o_.eager);
    std::vector<RunRecord> runs = context_.run({eager});
    if (std::optional<StepResult> error = error_from_runs(runs)) return error;
    eager_dir_ = eager.dir;
    result_.reproduce.push_back(reproduce_command(runs[0].cwd, runs[0].env, runs[0].argv));
    return std::nullopt;
  }

  // The distinct ops the eager run recorded, in the plugin's inventory order.
  std::optional<StepResult> list_ops() {
    std::vector<RunRecord> listing = context_.run({plugin_command(context_, "ops", {"ops", "--from", eager_dir_})});
    if (std::optional<StepResult> error = error_from_runs(listing)) return error;
    std::string inventory_error;
    std::optional<std::vector<OpCount>> inventory =
        parse_op_inventory(read_file(listing[0].stdout_path).value_or(""), &inventory_error);
    if (!inventory) {
      return error_result("cannot read the op inventory of " + eager_dir_ + ": " + inventory_error, std::move(result_));
    }
    nlohmann::json inventory_table = nlohmann::json::array();
    for (const OpCount& op : *inventory) {
      ops_.push_back(op.op);
      inventory_table.push_back({{"op", op.op}, {"calls", op.calls}});
    }
    result_.evidence.push_back({"table", "op inventory", "", inventory_table});
    if (ops_.empty()) return error_result("the eager run recorded no ops", std::move(result_));
    return std::nullopt;
  }

  // The target's switches, as the file the single-op processes read (none without switches).
  void write_switches_file() {
    if (!target_.switches || nlohmann::json(*target_.switches).empty()) return;
    switches_file_ = diagnose::write_switches_file(context_.step_dir(), *target_.switches);
  }

  // Rounds of single-op processes, in parallel, until every op was checked, skipped, failed to
  // check or crashed its process: the ops a process did not reach go again in the next round.
  std::optional<StepResult> run_batches() {
    const size_t batch_count = o_.batches;
    measured_ = earlier_op_costs(context_.run_dir(), context_.workflow().name, context_.step().id);
    std::vector<std::vector<std::string>> pending = split_by_cost(ops_, batch_count, measured_.seconds);
    bool batched = true;  // until a process dies in a batched compile: then each op only alone
    while (!pending.empty()) {
      ++rounds_;
      std::vector<RunRequest> requests;
      for (size_t b = 0; b < pending.size(); ++b) {
        std::string run_name = "batch" + std::to_string(rounds_) + "-" + std::to_string(b + 1);
        std::string out = context_.run_dir_of(run_name) + "/out";
        requests.push_back(plugin_command(context_, run_name,
                                          single_op_args(eager_dir_, out, target_, switches_file_, pending[b], batched),
                                          o_.eager));
        // The batches compile at the same time (GE's fusion_result.json, written into the
        // working directory, must not be two batches' at once).
        if (works_in_own_directory(context_, RunOverrides(), target_)) requests.back().cwd = requests.back().dir;
      }
      std::vector<RunRecord> runs = context_.run(requests);
      std::vector<std::string> again;
      for (size_t b = 0; b < runs.size(); ++b) {
        const RunRecord& run = runs[b];
        BatchOutcome outcome = read_batch(run, pending[b]);
        if (outcome.died_in_batched_compile) batched = false;
        bool progressed = !outcome.done.empty() || !outcome.errors.empty() || !outcome.skipped.empty() ||
                          outcome.crashed || outcome.died_in_batched_compile;
        if (!outcome.not_started.empty() && !progressed) {
          // The process died before checking any op: not the ops' fault, nothing to learn by retrying.
          StepResult failed = *error_from_runs({run});
          std::string setup_error = outcome.setup_error.value_or("");
          failed.summary = "the single-op run " + run.name +
                           (setup_error.empty() ? " checked no op: " + run.error : " could not set up: " + setup_error);
          return failed;
        }
        again.insert(again.end(), outcome.not_started.begin(), outcome.not_started.end());
      }
      pending.clear();
      if (!again.empty()) pending = split_by_cost(again, batch_count, measured_.seconds);
    }
    return std::nullopt;
  }

  // What one process of a round did with its ops: their costs, results, errors, skips and crash.
  BatchOutcome read_batch(const RunRecord& run, const std::vector<std::string>& ops) {
    std::string out = run.dir + "/out";
    bool ok = run.status == RunStatus::Succeeded;
    BatchOutcome outcome = read_batch_progress(read_file(out + "/progress.jsonl").value_or(""), ops, ok);
    double ops_s = 0;
    const std::string results = read_file(out + "/single_op.json").value_or("");
    batched_compiles_ += read_batched_compile_count(results);
    for (auto& [op, cost] : read_op_costs(results)) {
      ops_s += cost.compile_s + cost.run_s;
      costs_[op] = cost;
    }
    batch_times_.push_back(
        {{"run", run.name}, {"ops", ops.size()}, {"seconds", run.finished - run.started}, {"ops_s", ops_s}});
    if (!outcome.done.empty()) out_dirs_.push_back(out);
    op_errors_.insert(op_errors_.end(), outcome.errors.begin(), outcome.errors.end());
    skipped_.insert(skipped_.end(), outcome.skipped.begin(), outcome.skipped.end());
    if (outcome.crashed) {
      crashed_.push_back(*outcome.crashed);
      crash_logs_[*outcome.crashed] = run.error + "\n" + log_tail(run.stderr_path, 40, 1500);
    }
    return outcome;
  }

  // Judge each batch's eager and graph results; failing rows are attributed to their op.
  std::optional<StepResult> judge_batches() {
    for (size_t i = 0; i < out_dirs_.size(); ++i) {
      std::string label = fs::path(out_dirs_[i]).parent_path().filename().string();
      DumpJudgement j = judge_dumps(context_, out_dirs_[i] + "/eager", out_dirs_[i] + "/graph", std::nullopt,
                                    context_.step_dir() + "/compare/" + label, label);
      if (!j.compared) {
        return error_result(j.result.summary, std::move(result_));
      }
      for (const Evidence& e : j.result.evidence)
        if (e.kind == "file") result_.evidence.push_back(e);
      result_.reproduce.insert(result_.reproduce.end(), j.result.reproduce.begin(), j.result.reproduce.end());
      compared_ += j.compared->summary.compared;
      for (const compare::RowGroup& group : j.compared->groups)
        for (const compare::Row& row : group.rows)
          if (row.verdict == compare::Verdict::Fail) ++failing_rows_[row_op(row)];
      judged_.push_back({std::move(*j.compared), label});
    }
    return std::nullopt;
  }

  // A finding, the worst rows and a command that checks it alone for each op with failing rows:
  // the inventory's first, then rows named otherwise.
  void report_failed_ops() {
    std::vector<std::string> in_order = ops_;
    for (const auto& [op, count] : failing_rows_)
      if (std::find(ops_.begin(), ops_.end(), op) == ops_.end()) in_order.push_back(op);
    for (const std::string& op : in_order) {
      auto rows = failing_rows_.find(op);
      if (rows == failing_rows_.end()) continue;
      failed_ops_.push_back(op);
      nlohmann::json worst = nlohmann::json::array();
      for (const auto& [compared_batch, label] : judged_)
        for (nlohmann::json& row : worst_rows(compared_batch, o_.comparison.worst_rows, op)) worst.push_back(row);
      std::string detail;
      if (!worst.empty() && worst[0].contains("max_absolute_error") && worst[0]["max_absolute_error"].is_number())
        detail = ", worst max abs error " + worst[0]["max_absolute_error"].dump();
      else if (!worst.empty() && !worst[0].value("judged_by", "").empty())
        detail = ", " + worst[0]["judged_by"].get<std::string>();  // inf/NaN: no finite error to quote
      result_.findings.push_back(
          {op + " is wrong when compiled alone (" + std::to_string(rows->second) + " failing rows" + detail + ")", op});
      result_.evidence.push_back({"table", "worst rows of " + op, "", worst});
      std::vector<std::string> argv = {context_.model_python(), "-m", "diagnose_pytorch"};
      for (std::string& arg : single_op_args(eager_dir_, "single-op-" + op, target_, switches_file_, {op}))
        argv.push_back(std::move(arg));
      result_.reproduce.push_back(reproduce_command(context_.workflow().dir, {}, argv));
    }
    for (const nlohmann::json& op : failed_ops_)
      if (std::find(ops_.begin(), ops_.end(), op) != ops_.end()) wrong_ops_.push_back(op);
  }

  // The ops that crashed their process, could not be checked or were skipped; a crashed op counts as failed.
  void report_unchecked_ops() {
    for (const std::string& op : crashed_) {
      result_.findings.push_back({op + " crashed its single-op process", op});
      result_.evidence.push_back({"log", "crash of " + op, "", crash_logs_[op]});
    }
    for (const auto& [op, message] : op_errors_)
      result_.findings.push_back({op + " could not be checked alone: " + message, ""});
    for (const SkippedOp& op : skipped_)
      result_.findings.push_back({op.op + " was not checked alone: " + op.message, ""});
    for (const std::string& op : crashed_) failed_ops_.push_back(op);
  }

  // The metrics, the status and the summary; the rules behind ops wrong alone, when asked.
  void conclude() {
    nlohmann::json skipped_ops = nlohmann::json::array();
    for (const SkippedOp& op : skipped_) skipped_ops.push_back(op.op);
    size_t checked = ops_.size() - op_errors_.size() - crashed_.size() - skipped_.size();
    // The floor of every comparing step (min_judged_share) over the ops that can be checked: an op
    // skipped on purpose (random, no tensor output) is not one of them, one that could not be
    // checked (no recorded inputs, a compile error) is.
    const size_t checkable = ops_.size() - skipped_.size();
    const double checked_share = checkable == 0 ? 0.0 : static_cast<double>(checked) / static_cast<double>(checkable);
    const double min_share = o_.comparison.min_judged_share;
    result_.metrics = {
        {"ops", ops_.size()},
        {"compiles", compile_count(costs_) + batched_compiles_},
        {"batched_compiles", batched_compiles_},
        {"op_times", op_times_table(ops_, costs_)},
        {"batch_times", batch_times_},
        {"batch_costs_from", measured_.report.empty() ? nlohmann::json() : nlohmann::json(measured_.report)},
        {"checked", checked},
        {"skipped", skipped_.size()},
        {"skipped_ops", skipped_ops},
        {"failed", failed_ops_.size()},
        {"failed_ops", failed_ops_},
        {"crashed_ops", nlohmann::json(crashed_)},
        {"op_errors", op_errors_.size()},
        {"rounds", rounds_},
        {"compared", compared_},
        {"checked_share", checked_share},
        {"culprit", failed_ops_.empty() ? nlohmann::json() : failed_ops_[0]}};
    const size_t settled = static_cast<size_t>(std::count_if(
        costs_.begin(), costs_.end(), [](const auto& cost) { return cost.second.settled_in_batched_compile; }));
    std::string counts = std::to_string(checked) + " ops checked " + (settled ? "as one-op graphs" : "alone") + " in " +
                         std::to_string(rounds_) + " round(s)";
    if (settled)
      counts += " (" + std::to_string(settled) + " settled by " + std::to_string(batched_compiles_) +
                " batched compile(s), " + std::to_string(checked - settled) + " compiled alone)";
    if (!skipped_.empty()) counts += ", " + skipped_clause(skipped_);
    if (!op_errors_.empty()) counts += ", " + std::to_string(op_errors_.size()) + " could not be checked";
    if (failed_ops_.empty() && compared_ == 0) {
      result_.status = StepStatus::Error;
      result_.summary = counts + "; no op could be compared";
    } else if (failed_ops_.empty() && checked_share < min_share) {
      result_.status = StepStatus::Error;
      std::ostringstream why;
      why << counts << "; too few ops checked to say that every op matches eager (" << checked << " of " << checkable
          << ", " << static_cast<int>(checked_share * 100) << "%, min_judged_share is " << min_share << ")";
      result_.summary = why.str();
    } else if (failed_ops_.empty()) {
      result_.status = StepStatus::Pass;
      result_.summary = counts + (op_errors_.empty() && skipped_.empty() ? "; every op matches eager"
                                                                         : "; every op checked matches eager");
    } else {
      result_.status = StepStatus::Fail;
      std::vector<std::string> names;
      for (const auto& op : failed_ops_) names.push_back(op.get<std::string>());
      result_.summary = counts + "; wrong in graph mode: " + joined(names, ", ");
      if (!wrong_ops_.empty() && o_.attribute_rules)
        result_.summary +=
            "; " + attribute_to_rules(context_, {eager_dir_, target_, o_.eager}, o_.rule_search, wrong_ops_, result_);
    }
    if (!costs_.empty()) result_.summary += "; " + cost_clause(costs_, batched_compiles_);
  }

  const StepContext& context_;
  const SingleOpCheckOptions& o_;
  StepResult result_;
  std::string eager_dir_;
  std::vector<std::string> ops_;  // the inventory
  RunSpec target_;
  std::string switches_file_;
  // the rounds of single-op processes
  MeasuredCosts measured_;
  int rounds_ = 0;
  std::vector<std::string> out_dirs_, crashed_;
  std::vector<std::pair<std::string, std::string>> op_errors_;
  std::vector<SkippedOp> skipped_;
  std::map<std::string, std::string> crash_logs_;
  std::map<std::string, OpCost> costs_;
  long long batched_compiles_ = 0;
  nlohmann::json batch_times_ = nlohmann::json::array();
  // the judgement
  std::map<std::string, uint64_t> failing_rows_;
  uint64_t compared_ = 0;
  std::vector<std::pair<compare::CompareResult, std::string>> judged_;
  nlohmann::json failed_ops_ = nlohmann::json::array();
  std::vector<std::string> wrong_ops_;  // what a rule search over one-op graphs can explain
};

class SingleOpCheckStep : public StepKind {
 public:
  SingleOpCheckStep()
      : StepKind("single_op_check",
                 "Compile every distinct op of an eager run alone, as a one-op graph with the target's backend and "
                 "switches, and compare it with the eager op on the same recorded inputs; fails naming the ops whose "
                 "graph-mode result is wrong (or whose process crashed).") {}
  std::vector<Property> parameters() const override {
    return with_comparison_properties({
        optional("from", string_schema("An existing eager run directory (aten dump with inputs) to take the ops and "
                                       "their inputs from, instead of running the model.")),
        optional("eager", plugin_side_schema("Overrides of the eager run the ops are taken from.")),
        optional("target", plugin_side_schema("The graph-mode configuration under test: backend, device, dtype, "
                                              "switches (default: the model's).")),
        optional("batches", integer_schema("Processes the ops are split into (default: the workflow's slots).", 1)),
        optional("attribute_rules",
                 defaulted(boolean_schema("When ops fail alone, bisect the backend's switchable rules (fusion switch "
                                          "file; Inductor's named switches) on those one-op graphs to name the rule "
                                          "that breaks them."),
                           true)),
        optional("max_trials", defaulted(integer_schema("Trial budget of the rule search.", 2), 40)),
        optional(
            "confirmations",
            defaulted(integer_schema("Agreeing trials behind each confirmation of the rule search's answer.", 1), 2)),
    });
  }
  std::vector<std::string> result_fields() const override {
    return {"ops",         "checked",   "skipped",  "skipped_ops", "failed", "failed_ops",
            "crashed_ops", "op_errors", "rounds",   "culprit",     "rules",  "rule_conclusion",
            "workaround",  "compiles",  "op_times", "batch_times"};
  }
  std::string default_category() const override { return "single_op_graph_defect"; }
  void check(const StepSpec& step, const CheckContext&, Diagnostics& diagnostics) const override {
    if (step.node["from"] && step.node["eager"])
      diagnostics.error(step.node["eager"].Mark(), "steps." + step.id + ": give either from or eager, not both");
  }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto o = std::make_shared<SingleOpCheckOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    if (node["from"]) o->from = node["from"].Scalar();
    o->eager = RunOverrides::parse(node["eager"], diagnostics);
    o->target = RunOverrides::parse(node["target"], diagnostics);
    o->batches = node["batches"] ? node["batches"].as<size_t>() : static_cast<size_t>(context.workflow.defaults.slots);
    o->attribute_rules = option<bool>(step, "attribute_rules");
    o->rule_search = {option<int>(step, "max_trials"), option<int>(step, "confirmations")};
    return o;
  }

  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    const SingleOpCheckOptions& o = context.options<SingleOpCheckOptions>();
    if (o.from) return {};
    return {planned_plugin_run(context, "eager", ops_source_spec(context, o), o.eager)};
  }

  StepResult evaluate(const StepContext& context) const override {
    return SingleOpCheck(context, context.options<SingleOpCheckOptions>()).run();
  }
};

}  // namespace

std::unique_ptr<StepKind> make_single_op_check_step() { return std::make_unique<SingleOpCheckStep>(); }

}  // namespace diagnose
