// `known_causes`: the flowchart's "engineers remove common problems by experience" as a step,
// over the catalogue of steps/causes/known_causes.h. Without `experiments` it runs the configuration
// and dump detectors on what this invocation's runs recorded (making the eager run the
// single-op check makes, when no step ran before it); with `experiments: true` it runs the A/B
// experiments: the compiled run twice (run-to-run differences) and once per applicable cause
// with that cause flipped, each judged against the golden outputs like a bisection trial.
#include <algorithm>
#include <cctype>

#include "compare/match.h"
#include "orchestrator/bisect/trial_oracle.h"
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "steps/bisection/bisection_steps.h"
#include "steps/causes/known_causes.h"
#include "steps/json_text.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

// The experiments' compiled runs: final outputs are what a trial is judged on.
const RunSpec kCompiledOutputs = spec_of("compiled", dump_at("none"));

// The detectors' second eager run: statistics (hashes) are all the run-to-run check reads.
const RunSpec kStatsOnlyRepeat = [] {
  RunSpec spec = spec_of("eager", dump_at("aten"));
  spec.dump->stats_only = true;
  return spec;
}();

bool has_dump(const std::string& dir) { return !compare::manifest_ranks(dir).empty(); }

RecordedRun recorded_run(const std::string& step_id, const RunRecord& record, const PluginStatus& status) {
  return {step_id + "/" + record.name, status, has_dump(record.dump_dir) ? record.dump_dir : "",
          reproduce_command(record.cwd, record.env, record.argv), record.dir};
}

// The runs of the model's script this invocation made so far, with their status.json.
std::vector<RecordedRun> recorded_runs(const State& state) {
  std::vector<RecordedRun> runs;
  for (const StepResult& step : state.steps)
    for (const RunRecord& record : step.runs) {
      // a run shared with an earlier step is that step's record already
      if (record.status != RunStatus::Succeeded || record.dir.empty() || !record.from_step.empty()) continue;
      PluginStatus status = read_plugin_status(record.dir);
      if (!status.ran_script()) continue;  // ops, single-op batches...
      runs.push_back(recorded_run(step.id, record, status));
    }
  return runs;
}

bool applies_to(const KnownCause& cause, const RunSpecFields& spec) {
  return cause_applies(cause, spec.backend.value_or(""), spec.device.value_or("cpu"), spec.dtype.value_or("float32"));
}

nlohmann::json row(const KnownCause& cause, const std::string& result, const std::string& evidence) {
  return {
      {"cause", cause.name}, {"checks", cause.checks}, {"result", result}, {"evidence", evidence}, {"fix", cause.fix}};
}

// A decisive cause makes the step fail naming it, its evidence and its fix.
void explained_by(const KnownCause& cause, const std::string& evidence, const std::string& op, StepResult& result) {
  result.findings.push_back({"known cause " + cause.name + ": " + evidence + "; fix: " + cause.fix, op});
  if (result.status == StepStatus::Fail) return;
  result.status = StepStatus::Fail;
  result.metrics["culprit"] = op.empty() ? cause.name : cause.name + " at " + op;
  result.metrics["cause_op"] = op;
  result.summary = "known cause " + cause.name + ": " + evidence;
}

// What a detector found: a decisive cause explains the failure, any other is listed as checked.
void detected(const KnownCause& cause, const Detection& detection, nlohmann::json& table, StepResult& result) {
  table.push_back(row(cause, detection.decisive ? "explains the failure" : "present", detection.evidence));
  if (detection.decisive)
    explained_by(cause, detection.evidence, detection.op, result);
  else
    result.findings.push_back(
        {"checked " + cause.name + ": " + detection.evidence + " (fix if it matters: " + cause.fix + ")", ""});
}

// Bitwise run-to-run differences are common (CUDA's atomics) and harmless within tolerance: they
// explain a failure only when the two runs' final outputs fail the comparison between themselves.
StepResult judge_outputs_between(const StepContext& context, const std::string& run_dir_a,
                                 const std::string& run_dir_b) {
  return judge_dumps(context, run_dir_a + "/outputs", run_dir_b + "/outputs", std::nullopt,
                     context.step_dir() + "/compare-run-to-run", "run-to-run final outputs")
      .result;
}

// A failed run in a line: why (error_from_runs's summary) and the last line it logged (the
// exception, an out-of-memory message).
std::string run_failure_text(const StepResult& failed) {
  for (const Evidence& log : failed.evidence) {
    if (log.kind != "log" || !log.value.is_string()) continue;
    std::string tail = log.value.get<std::string>();
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.pop_back();
    if (!tail.empty()) return failed.summary + "; the last line it logged: " + tail.substr(tail.find_last_of('\n') + 1);
  }
  return failed.summary;
}

// The step's keys.
struct KnownCausesOptions : ComparingOptions {
  bool experiments = false;
  RunOverrides eager, target;      // of those runs
  Side golden;                     // a dump's path or a run
  std::vector<KnownCause> causes;  // the workflow's own, as experiments
};

class KnownCausesStep : public StepKind {
 public:
  KnownCausesStep()
      : StepKind("known_causes",
                 "The catalogue of known causes (training-mode dropout, float16 overflow, TF32, non-determinism, "
                 "graph breaks, TorchAir options, Inductor precision knobs): configuration and dump detectors on the "
                 "runs so far, or with experiments: true A/B runs of the compiled model with one thing flipped, judged "
                 "against the golden outputs; fails naming the cause that explains the failure and its fix.") {}
  std::vector<Property> parameters() const override {
    Schema flip = object_schema(
        "What the experiment changes in the compiled run.",
        {optional("env", map_schema("Environment variables set.", plain_string_schema("value"))),
         optional("args", array_schema("Arguments appended to the model's.", plain_string_schema("argument"))),
         optional("switches", any_schema("Run spec switches merged in (inductor: {key: value}, torchair...).")),
         optional("spec", any_schema("Any run spec keys merged in (deterministic, dtype, mode...)."))});
    Schema cause = object_schema(
        "A cause of the workflow's own, checked by an A/B experiment.",
        {required("name", plain_string_schema("The cause's name (the verdict's culprit).")), required("flip", flip),
         optional("expect", plain_string_schema("What flipping it should change, in words.")),
         optional("fix", plain_string_schema("The fix to report."))});
    return with_comparison_properties({
        optional("experiments",
                 defaulted(boolean_schema("false: the detectors on what the runs recorded; true: the A/B experiments "
                                          "(compiled runs with one cause flipped)."),
                           false)),
        optional("eager", plugin_side_schema("Overrides of the eager run the detectors read when no step ran before.")),
        optional("target", plugin_side_schema("Overrides of the compiled run the experiments flip.")),
        optional("golden", any_of_schema("The experiments' reference: a dump path, or overrides of an eager run "
                                         "(default: graph_dump_compare's golden outputs, else an eager run).",
                                         {string_schema("path of an existing dump"),
                                          plugin_side_schema("overrides of the golden run")})),
        optional("causes", array_schema("Causes of the workflow's own, as experiments.", cause)),
    });
  }
  std::vector<std::string> result_fields() const override { return {"culprit", "cause_op", "checked", "found"}; }
  std::string default_category() const override { return "known_cause"; }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto o = std::make_shared<KnownCausesOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    o->experiments = option<bool>(step, "experiments");
    o->eager = RunOverrides::parse(node["eager"], diagnostics);
    o->target = RunOverrides::parse(node["target"], diagnostics);
    o->golden = Side::parse(node["golden"], diagnostics);
    o->causes = user_causes(node["causes"], "steps." + step.id, &diagnostics);
    return o;
  }
  void check(const StepSpec& step, const CheckContext&, Diagnostics& diagnostics) const override {
    if (step.node["causes"] && !(step.node["experiments"] && step.node["experiments"].as<bool>(false)))
      diagnostics.error(step.node["causes"].Mark(),
                        "steps." + step.id + ".causes: a workflow's causes are A/B experiments: set experiments: true");
  }

  // The detectors' own eager run, when no step ran before them: single_op's, shared. The
  // experiments' golden (when graph_dump_compare made none) and their compiled run and its repeat:
  // graph_dump_compare's target and fusion_bisect's all-on trials can be them.
  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    const KnownCausesOptions& o = context.options<KnownCausesOptions>();
    if (!o.experiments)
      return {planned_plugin_run(context, "eager", side_spec(context, o.eager, kEagerAtenRun), o.eager)};
    std::vector<PlannedRun> planned = planned_golden(context, o.golden, {});
    const RunSpec spec = side_spec(context, o.target, kCompiledOutputs);
    for (int repeat = 0; repeat < 2; ++repeat)
      planned.push_back(planned_plugin_run(context, bisect::trial_name({}, repeat), spec,
                                           compiled_side(context, o.target, spec), repeat));
    return planned;
  }

  StepResult evaluate(const StepContext& context) const override {
    const KnownCausesOptions& o = context.options<KnownCausesOptions>();
    return o.experiments ? experiments(context, o) : detectors(context, o);
  }

 private:
  // The detectors on what this invocation's runs recorded (an eager run and its repeat made now
  // when no step ran before), the run-to-run check over pairs of eager runs among them.
  static StepResult detectors(const StepContext& context, const KnownCausesOptions& o) {
    StepResult result;
    std::vector<RecordedRun> runs = recorded_runs(context.state());
    std::string repeat_failure;  // why the repeated eager run did not finish, if it did not
    if (runs.empty()) {
      if (std::optional<StepResult> error = run_eager_twice(context, o, runs, repeat_failure, result)) return *error;
    }
    result.status = StepStatus::Pass;
    nlohmann::json table = nlohmann::json::array();
    size_t found = detect_in_runs(runs, table, result);
    if (detect_run_to_run(context, runs, repeat_failure, table, result)) ++found;
    result.evidence.push_back({"table", "known causes checked", "", table});
    result.metrics["checked"] = table.size();
    result.metrics["found"] = found;
    if (result.status == StepStatus::Pass)
      result.summary = std::to_string(table.size()) + " known causes checked in " + std::to_string(runs.size()) +
                       " run(s); none explains a difference" +
                       (found ? " (" + std::to_string(found) + " present)" : "");
    return result;
  }

  // The eager run, and again as a repeat: run-to-run differences show before any op is judged. A
  // repeat that crashes (out of memory on a device) costs the run-to-run check, not the other
  // detectors: why goes in repeat_failure, its logs in the result's evidence.
  static std::optional<StepResult> run_eager_twice(const StepContext& context, const KnownCausesOptions& o,
                                                   std::vector<RecordedRun>& runs, std::string& repeat_failure,
                                                   StepResult& result) {
    RunRequest eager = plugin_run(context, "eager", side_spec(context, o.eager, kEagerAtenRun), o.eager);
    RunRequest repeat = plugin_run(context, "repeat", side_spec(context, o.eager, kStatsOnlyRepeat), o.eager, 1);
    const std::vector<RunRecord> records = context.run({eager, repeat});
    if (std::optional<StepResult> error = error_from_runs({records[0]})) return error;
    runs.push_back(recorded_run(context.step().id, records[0], read_plugin_status(records[0].dir)));
    if (std::optional<StepResult> failed = error_from_runs({records[1]})) {
      repeat_failure = run_failure_text(*failed);
      result.evidence = failed->evidence;
    } else {
      runs.push_back(recorded_run(context.step().id, records[1], read_plugin_status(records[1].dir)));
    }
    return std::nullopt;
  }

  // Each catalogue detector on the first run it applies to that shows its cause; how many found.
  static size_t detect_in_runs(const std::vector<RecordedRun>& runs, nlohmann::json& table, StepResult& result) {
    size_t found = 0;
    for (const KnownCause& cause : known_causes()) {
      if (!cause.detect) continue;
      std::optional<Detection> detection;
      std::string seen_in;
      bool applies = false;
      for (const RecordedRun& run : runs) {
        if (!applies_to(cause, run.status.spec_fields)) continue;
        applies = true;
        if ((detection = cause.detect(run))) {
          seen_in = run.name;
          break;
        }
      }
      if (!applies) {
        table.push_back(row(cause, "does not apply", ""));
        continue;
      }
      if (!detection) {
        table.push_back(row(cause, "not found", ""));
        continue;
      }
      ++found;
      detection->evidence += " (run " + seen_in + ")";
      detected(cause, *detection, table, result);
      if (detection->decisive)
        for (const RecordedRun& run : runs)
          if (run.name == seen_in) result.reproduce.push_back(run.command);
    }
    return found;
  }

  // The first pair of eager runs whose dumps show a nondeterministic op; decisive only when their
  // final outputs fail the comparison between themselves. Whether it found one.
  static bool detect_run_to_run(const StepContext& context, const std::vector<RecordedRun>& runs,
                                const std::string& repeat_failure, nlohmann::json& table, StepResult& result) {
    const KnownCause& nondeterministic = nondeterministic_op_cause();
    std::optional<Detection> run_to_run;
    for (size_t a = 0; a < runs.size() && !run_to_run; ++a)
      for (size_t b = a + 1; b < runs.size() && !run_to_run; ++b)
        if (run_mode(runs[a]) == "eager" && (run_to_run = detect_nondeterministic_op(runs[a], runs[b]))) {
          if (run_to_run->decisive) {
            const StepResult between = judge_outputs_between(context, runs[a].run_dir, runs[b].run_dir);
            if (between.status != StepStatus::Fail) {
              run_to_run->decisive = false;
              run_to_run->evidence += between.status == StepStatus::Pass
                                          ? ", within the comparison's tolerances, so it explains no failure alone"
                                          : ", whose final outputs could not be compared (" + between.summary +
                                                "), so it explains no failure alone";
            }
          }
          detected(nondeterministic, *run_to_run, table, result);
          if (run_to_run->decisive) {
            result.reproduce.push_back(runs[a].command);
            result.reproduce.push_back(runs[b].command);
          }
        }
    if (!repeat_failure.empty()) {
      const std::string evidence = "run-to-run check not possible: " + repeat_failure;
      table.push_back(row(nondeterministic, "not comparable", evidence));
      result.findings.push_back({"checked " + nondeterministic.name + ": " + evidence, ""});
    } else if (!run_to_run) {
      table.push_back(runs.size() > 1 ? row(nondeterministic, "not found", "")
                                      : row(nondeterministic, "not comparable", "one run of the model"));
    }
    return run_to_run.has_value();
  }

  // graph_dump_compare's golden outputs, which carry their float64 truth: no golden run of our own.
  static Side graph_compare_golden(const State& state) {
    for (const StepResult& step : state.steps) {
      if (step.kind != "graph_dump_compare") continue;
      for (const RunRecord& record : step.runs)
        if (record.name == "golden" && record.status == RunStatus::Succeeded && has_dump(record.dir + "/outputs"))
          return Side{true, record.dir + "/outputs", {}};
    }
    return Side();
  }

  // The A/B experiments: the compiled run twice, then once per cause with it flipped, each judged
  // against the golden outputs; the detectors' findings on the compiled runs so far beside them.
  static StepResult experiments(const StepContext& context, const KnownCausesOptions& o) {
    const RunSpec target_spec = side_spec(context, o.target, kCompiledOutputs);
    const std::vector<RecordedRun> runs = recorded_runs(context.state());
    nlohmann::json table = nlohmann::json::array();
    const std::vector<KnownCause> causes = causes_to_flip(o, target_spec, runs, table);
    const std::vector<std::pair<const KnownCause*, Detection>> in_compiled_runs = detections_in_compiled_runs(runs);
    ABTrials trials;
    if (std::optional<StepResult> error = run_trials(context, o, target_spec, causes, trials)) return *error;
    StepResult result;
    result.status = StepStatus::Pass;
    result.evidence.push_back({"table", "A/B trials", "", trials_table(trials)});
    result.reproduce = trials.commands;
    for (const auto& [cause, detection] : in_compiled_runs) detected(*cause, detection, table, result);
    judge_run_to_run(context, trials, table, result);
    const bool baseline_fails = trials.outcomes[0].outcome == bisect::Outcome::Fail;
    judge_flips(causes, trials, baseline_fails, table, result);
    result.evidence.push_back({"table", "known causes checked", "", table});
    result.metrics["checked"] = table.size();
    result.metrics["found"] = std::count_if(table.begin(), table.end(), [](const nlohmann::json& checked) {
      return checked["result"] == "explains the failure";
    });
    if (result.status == StepStatus::Pass)
      result.summary = std::to_string(causes.size() + 1) + " A/B experiment(s): " +
                       (baseline_fails ? "none makes the compiled outputs pass"
                                       : "the compiled outputs pass against the golden as configured, so no flip can "
                                         "explain the failure");
    return result;
  }

  // The catalogue's causes an experiment can flip that apply to the target and could change
  // something in the runs (the others go in the table as such), then the workflow's own.
  static std::vector<KnownCause> causes_to_flip(const KnownCausesOptions& o, const RunSpec& target_spec,
                                                const std::vector<RecordedRun>& runs, nlohmann::json& table) {
    std::vector<KnownCause> causes;
    for (const KnownCause& cause : known_causes()) {
      if (!cause.flip) continue;
      if (!applies_to(cause, run_spec_fields(target_spec)))
        table.push_back(row(cause, "does not apply", ""));
      else if (cause.wanted && !cause.wanted(runs))
        table.push_back(row(cause, "not needed", "nothing in the runs it could change"));
      else
        causes.push_back(cause);
    }
    for (const KnownCause& cause : o.causes) causes.push_back(cause);
    return causes;
  }

  // The detectors on the compiled runs so far (graph_compare's target): graph breaks, recompiles
  // and TorchAir's options show only there, not in the eager runs known_config read.
  static std::vector<std::pair<const KnownCause*, Detection>> detections_in_compiled_runs(
      const std::vector<RecordedRun>& runs) {
    std::vector<std::pair<const KnownCause*, Detection>> found;
    for (const KnownCause& cause : known_causes()) {
      if (!cause.detect) continue;
      for (const RecordedRun& run : runs)
        if (run_mode(run) == "compiled" && applies_to(cause, run.status.spec_fields))
          if (std::optional<Detection> detection = cause.detect(run)) {
            detection->evidence += " (run " + run.name + ")";
            found.emplace_back(&cause, *detection);
            break;
          }
    }
    return found;
  }

  // The trials run: the compiled run twice (run-to-run differences), then each cause flipped.
  struct ABTrials {
    std::vector<bisect::Config> configs;
    std::vector<bisect::TrialOutcome> outcomes;
    std::vector<std::string> commands;    // the golden's, then each trial's in order
    std::vector<std::string> trial_dirs;  // where each trial ran (a shared run: where its maker ran it)
  };

  // Runs the trials (and the golden run, when one is needed, in their round) and judges each
  // against the golden outputs.
  static std::optional<StepResult> run_trials(const StepContext& context, const KnownCausesOptions& o,
                                              const RunSpec& target_spec, const std::vector<KnownCause>& causes,
                                              ABTrials& trials) {
    const RunOverrides& target = o.target;
    const std::string model_cwd = context.path(context.workflow().model.command.cwd.value_or("."));
    bisect::TrialSetup setup;
    setup.dir_of = [&](const std::string& name) { return context.run_dir_of(name); };
    bisect::BisectionPlan plan;  // holds the golden run judge_against_golden makes, if any
    std::optional<StepResult> golden_error;
    // The golden run, if one is needed, starts in the trials' round.
    setup.execute = [&](const std::vector<RunRequest>& requests) {
      std::vector<RunRequest> round = plan.alongside;
      round.insert(round.end(), requests.begin(), requests.end());
      std::vector<RunRecord> records = context.run(round);
      for (const RunRecord& record : records)
        trials.commands.push_back(reproduce_command(record.cwd, record.env, record.argv));
      golden_error = error_from_runs({records.begin(), records.begin() + plan.alongside.size()});
      std::vector<RunRecord> ran(records.begin() + plan.alongside.size(), records.end());
      for (const RunRecord& record : ran) trials.trial_dirs.push_back(record.dir);
      return ran;
    };
    setup.make_request = [&](const bisect::Trial& trial) {
      RunSpec spec = target_spec;
      const KnownCause* flipped = nullptr;
      for (const KnownCause& cause : causes)
        if (!trial.off.empty() && cause.name == trial.off.front()) flipped = &cause;
      if (flipped) spec = overlaid(spec, flipped->flip->spec);
      // the k-th run of a configuration: another step's k-th, never the first again (run to run);
      // a flip's env and args, set below, are not in the identity plugin_run sees: a run of its own
      RunRequest request = plugin_run(context, trial.name, spec, compiled_side(context, target, spec), trial.occurrence,
                                      flipped ? Sharing::OwnRun : Sharing::Shareable);
      if (flipped) {
        for (const auto& [name, value] : flipped->flip->env) request.env[name] = value;
        request.argv.insert(request.argv.end(), flipped->flip->args.begin(), flipped->flip->args.end());
      }
      bisect::anchor_relative_paths(request, model_cwd);
      return request;
    };
    const Side golden = o.golden.given ? o.golden : graph_compare_golden(context.state());
    std::string problem = judge_against_golden(context, golden, target, {}, setup, plan);
    if (!problem.empty()) return error_result(problem);

    bisect::TrialOracle oracle(setup, {});
    trials.configs = {{}, {}};  // the compiled run twice: run-to-run differences
    for (const KnownCause& cause : causes) trials.configs.push_back({cause.name});
    trials.outcomes = oracle.run_batch(trials.configs);
    return golden_error;
  }

  static nlohmann::json trials_table(const ABTrials& trials) {
    nlohmann::json table = nlohmann::json::array();
    for (size_t i = 0; i < trials.configs.size(); ++i) {
      const std::string name = bisect::trial_name(trials.configs[i], i == 1 ? 1 : 0);
      table.push_back({{"trial", name},
                       {"flipped", trials.configs[i].empty() ? "nothing" : trials.configs[i].front()},
                       {"outcome", bisect::outcome_name(trials.outcomes[i].outcome)},
                       {"detail", trials.outcomes[i].detail}});
    }
    return table;
  }

  // The compiled run twice with the same configuration: outputs that differ bitwise explain the
  // failure only when the two runs' outcomes differ or their outputs fail between themselves.
  static void judge_run_to_run(const StepContext& context, const ABTrials& trials, nlohmann::json& table,
                               StepResult& result) {
    KnownCause repeat;
    repeat.name = "nondeterministic_run";
    repeat.checks = "the compiled run twice with the same configuration: its final outputs bitwise";
    repeat.fix =
        "find the op whose kernel is not deterministic (atomics, unseeded randomness) and make it so, or "
        "torch.use_deterministic_algorithms(True); compare only what is deterministic";
    const std::vector<bisect::TrialOutcome>& outcomes = trials.outcomes;
    const std::string &first = trials.trial_dirs[0], &second = trials.trial_dirs[1];
    std::optional<std::vector<std::string>> differing = differing_outputs(first, second);
    if (differing && !differing->empty()) {
      std::string evidence = "two runs of the same compiled configuration differ in " + joined(*differing) +
                             " (outcomes " + bisect::outcome_name(outcomes[0].outcome) + ", " +
                             bisect::outcome_name(outcomes[1].outcome) + ")";
      // bitwise differences within tolerance (CUDA's atomics) explain no failure
      const bool explains = outcomes[0].outcome != outcomes[1].outcome ||
                            judge_outputs_between(context, first, second).status == StepStatus::Fail;
      if (explains) {
        evidence += ": the differences are run to run, not a graph defect";
        table.push_back(row(repeat, "explains the failure", evidence));
        explained_by(repeat, evidence, "", result);
      } else {
        evidence += ", within the comparison's tolerances between themselves: they explain no failure";
        table.push_back(row(repeat, "present", evidence));
        result.findings.push_back({"checked " + repeat.name + ": " + evidence, ""});
      }
    } else {
      table.push_back(row(repeat, differing ? "not found" : "not comparable",
                          differing ? "the two runs' outputs are bitwise equal" : "no outputs recorded"));
    }
  }

  // A cause explains the failure when the compiled outputs fail as configured and pass with it flipped.
  static void judge_flips(const std::vector<KnownCause>& causes, const ABTrials& trials, bool baseline_fails,
                          nlohmann::json& table, StepResult& result) {
    for (size_t i = 2; i < trials.configs.size(); ++i) {
      const KnownCause& cause = causes[i - 2];
      const bisect::Outcome outcome = trials.outcomes[i].outcome;
      if (baseline_fails && outcome == bisect::Outcome::Pass) {
        std::string evidence = "with " + cause.name +
                               " flipped the compiled outputs pass against the golden; as "
                               "configured they fail";
        table.push_back(row(cause, "explains the failure", evidence));
        explained_by(cause, evidence, "", result);
      } else {
        table.push_back(row(cause, "does not explain it",
                            "flipped: " + bisect::outcome_name(outcome) +
                                (trials.outcomes[i].detail.empty() ? "" : " (" + trials.outcomes[i].detail + ")")));
      }
    }
  }
};

}  // namespace

std::unique_ptr<StepKind> make_known_causes_step() { return std::make_unique<KnownCausesStep>(); }

}  // namespace diagnose
