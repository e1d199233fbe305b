// `fusion_bisect`: finds the fusion rule(s) (or Inductor switches) that break precision by
// running the target with rules switched off, one fresh process per trial, judged against
// the golden run (orchestrator/bisect/driver.h).

#include <algorithm>
#include <optional>
#include <set>

#include "orchestrator/bisect/driver.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/util/files.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "runspec/plugin_status.h"
#include "steps/bisection/bisection_knobs.h"
#include "steps/bisection/bisection_steps.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/feature_notes.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

std::vector<std::string> strings(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node && node.IsSequence())
    for (const auto& item : node) out.push_back(item.Scalar());
  return out;
}

// "${switch_file}" replaced by `path` in every string of a command spec ($ escaped as $$).
void put_switch_file(std::string& text, const std::string& path) {
  std::string escaped;
  for (char c : path) escaped += c == '$' ? std::string("$$") : std::string(1, c);
  for (size_t at = text.find("${switch_file}"); at != std::string::npos;
       at = text.find("${switch_file}", at + escaped.size()))
    text.replace(at, 14, escaped);
}

// The model's command with "${switch_file}" replaced in its argv, args, shell and env values.
CommandSpec with_switch_file(CommandSpec command, const std::string& path) {
  for (std::string& arg : command.argv) put_switch_file(arg, path);
  for (std::string& arg : command.args) put_switch_file(arg, path);
  put_switch_file(command.shell, path);
  for (auto& [key, value] : command.env) put_switch_file(value, path);
  return command;
}

// A side's command with "${switch_file}" replaced in every string of it.
CommandSpec side_with_switch_file(const CommandSpec& side, const std::string& path) {
  CommandSpec command = with_switch_file(side, path);
  if (command.cwd) put_switch_file(*command.cwd, path);
  for (std::string& output : command.outputs) put_switch_file(output, path);
  return command;
}

// A fusion_bisect knob: each trial gets the fusion switch file turning its configuration off;
// a plugin trial gets its configuration through its run spec too, the way the kind says.
class RuleKnob : public FusionSwitchFileKnob {
 public:
  using FusionSwitchFileKnob::FusionSwitchFileKnob;
  // The knob's name in the step's options, metrics and bisection.json.
  virtual std::string name() const = 0;
  // The run spec's switch the trials set, taken out for the all-on run.
  virtual void clear(RunSwitches& switches) const = 0;
  // A plugin trial's run spec with `trial`'s configuration applied.
  virtual void apply(const bisect::Trial& trial, RunSpec& spec) const = 0;
  // The torch features the knob's rules need: a torch without them leaves those rules out.
  virtual std::set<std::string> needed_features() const { return {}; }
  // The workaround's evidence besides the switch file.
  virtual void add_workaround(const bisect::Config& /*culprits*/, StepResult& /*result*/) const {}
  // The rules the workaround turns off.
  virtual bisect::Config workaround_off(const bisect::Config& culprits) const { return culprits; }
  // Where the culprits are the user's own graph passes rather than the compiler's rules: the
  // culprit, category and workaround name them.
  virtual void name_user_passes(const bisect::Result& /*bisection*/, StepResult& /*result*/) const {}
  // Whether each trial runs in a directory of its own (a report other than the plugin's status.json
  // is read from the working directory).
  virtual bool trials_in_own_directory() const { return fired_report() != "status.json"; }
};

// The Python literal of an eager-like setting as status.json gives it (false: False, null: None).
std::string python_literal(const nlohmann::json& value) {
  return value.is_boolean() ? (value.get<bool>() ? "True" : "False") : value.is_null() ? "None" : value.dump();
}

// Inductor's pass switches: switches.inductor_off, the fired ones in the plugin's status.json.
// A user's own pass in one of Inductor's custom-pass slots is a rule too, failing only with its
// gate (the Inductor switch that skips it as well) on: a culprit set of the pass and its gate is
// the user's pass, and its workaround empties the slot alone.
class InductorKnob : public RuleKnob {
 public:
  using RuleKnob::RuleKnob;
  std::string name() const override { return "inductor"; }
  void clear(RunSwitches& switches) const override { switches.inductor_off.reset(); }
  void apply(const bisect::Trial& trial, RunSpec& spec) const override { spec.run_switches().inductor_off = trial.off; }
  std::set<std::string> needed_features() const override { return {"inductor_rules"}; }
  void learn(const std::string& report_path, bool listing) override {
    if (listing) rules_ = read_rules(report_path);
  }
  void resume(const nlohmann::json&, const std::vector<std::string>&, const std::string& all_on_report) override {
    rules_ = read_rules(all_on_report);
  }
  // The run spec's switches that turn the culprits off (a user's pass without its gate).
  std::string write_workaround(const bisect::Config& culprits, const std::string& dir) const override {
    RunSwitches off;
    off.inductor_off = workaround_off(culprits);
    return write_switches_file(dir, off);
  }
  void add_workaround(const bisect::Config& culprits, StepResult& result) const override {
    const bisect::Config off = workaround_off(culprits);
    result.evidence.push_back({"metric", "workaround: run spec switches.inductor_off", "", off});
    std::vector<std::string> settings;
    for (const std::string& rule : off) {
      auto known = rules_.find(rule);
      if (known != rules_.end() && !known->second.config.empty())
        settings.push_back("torch._inductor.config." + known->second.config + " = " +
                           python_literal(known->second.off_value));
    }
    result.metrics["workaround_setting"] = (settings.empty() ? "" : joined(settings, "; ") + " ") +
                                           "(run spec switches.inductor_off: " + joined(off) + ")";
  }
  void name_user_passes(const bisect::Result& bisection, StepResult& result) const override {
    name_gated_user_passes(bisection, result);
    std::vector<std::string> passes, slots;
    for (const bisect::CulpritSet& set : bisection.culprit_sets) {
      std::optional<std::string> pass = user_pass_of(set.rules, rules_);
      if (!pass) return;  // an Inductor rule of its own among the culprits: a fusion defect
      auto rule = rules_.find(*pass);
      passes.push_back(rule->second.user_pass);
      slots.push_back("torch._inductor.config." + rule->second.config);
      result.findings.insert(result.findings.begin(),
                             {"your own graph pass " + rule->second.user_pass + ", set as " + slots.back() +
                                  ", breaks precision (not a rule of Inductor's): with it the target fails, with "
                                  "only it taken out (Inductor's own passes on) it passes",
                              rule->second.user_pass});
    }
    if (passes.empty()) return;
    result.metrics["culprit"] = joined(passes, "+");
    result.metrics["category"] = "user_pass_defect";
    result.summary = "your own graph pass " + joined(passes, ", ") + " (" + joined(slots, ", ") +
                     ") breaks precision, not a rule of Inductor's; " + result.summary;
    result.metrics["workaround_setting"] = "fix " + joined(passes, " and ") +
                                           ", or run without it: " + joined(slots, " = None; ") + " = None" +
                                           " (the last reproduce command runs the model so)";
  }

  // A gate found alone also skips the user's passes in its slots: where such a pass is not among
  // the culprits (a backend that sets the slot itself keeps it on whatever the trial says), the
  // finding names it as the first place to look, no more: only the gate was taken out.
  void name_gated_user_passes(const bisect::Result& bisection, StepResult& result) const {
    for (const bisect::CulpritSet& set : bisection.culprit_sets) {
      if (set.rules.size() != 1) continue;
      for (const auto& entry : rules_)
        if (const InductorRule& rule = entry.second; rule.gate == set.rules.front() && !rule.user_pass.empty())
          result.findings.push_back({set.rules.front() + " also skips your own graph pass " + rule.user_pass +
                                         " (torch._inductor.config." + rule.config +
                                         "), which could not be taken out alone (a backend that sets the slot "
                                         "itself keeps it): look at it first",
                                     rule.user_pass});
    }
  }

  // Each user's pass with its gate, both among the candidates: tried first.
  std::map<std::string, std::string> gates(const std::vector<std::string>& candidates) const override {
    return user_pass_gates(candidates, rules_);
  }

  // The culprits without the gates of the user's passes among them.
  bisect::Config workaround_off(const bisect::Config& culprits) const override {
    return without_user_pass_gates(culprits, rules_);
  }

 private:
  static std::map<std::string, InductorRule> read_rules(const std::string& status_path) {
    const std::optional<std::string> text = read_file(status_path);
    return parse_plugin_status(text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json()).inductor_rules;
  }
  std::map<std::string, InductorRule> rules_;
};

// Inductor's switches under a user's backend built on Inductor, known only once the all-on run
// of the fusion switch file's knob left no report of its own and the plugin's status.json says
// Inductor compiled: the trials run in directories of their own as that run did, so it is this
// knob's all-on run too.
class UserBackendInductorKnob : public InductorKnob {
 public:
  UserBackendInductorKnob() : InductorKnob("status.json") {}
  bool trials_in_own_directory() const override { return true; }
};

// A TorchAir-style backend's fusion switch file: switches.fusion_switch_file.
class PluginSwitchFileKnob : public RuleKnob {
 public:
  using RuleKnob::RuleKnob;
  std::string name() const override { return "fusion_switch_file"; }
  void clear(RunSwitches& switches) const override { switches.fusion_switch_file.reset(); }
  void apply(const bisect::Trial& trial, RunSpec& spec) const override {
    spec.run_switches().fusion_switch_file = trial.switch_file;
  }
};

// The switch file reaches the model through ${switch_file} in its command or switch_env.
class CommandSwitchFileKnob : public RuleKnob {
 public:
  using RuleKnob::RuleKnob;
  std::string name() const override { return "switch_file"; }
  void clear(RunSwitches& switches) const override { switches.fusion_switch_file.reset(); }
  void apply(const bisect::Trial&, RunSpec&) const override {}
};

// The step's keys; the schema below declares them.
struct FusionBisectOptions : ComparingOptions {
  std::optional<std::string> knob, fired_report, switch_env;  // as written; absent: chosen from the model
  bool exit_code = false;                                     // judge: exit_code
  Side golden;                                                // a dump's path or a run
  RunOverrides target;                                        // overrides of the run under test
  std::vector<std::string> judge_ops, candidates, include, exclude;
  bisect::Options search;
};

class FusionBisectStep : public StepKind {
 public:
  FusionBisectStep()
      : StepKind("fusion_bisect",
                 "Find the fusion rule(s) or Inductor switches whose being on breaks precision: trials of the target "
                 "with rules switched off, each a fresh run judged against the golden run; writes a switch file that "
                 "turns only the culprits off.") {}
  std::vector<Property> parameters() const override {
    std::vector<Property> side = plugin_side_properties();
    for (const Property& p : command_properties())
      if (std::none_of(side.begin(), side.end(), [&](const Property& q) { return q.name == p.name; }))
        side.push_back(p);
    // A plugin run says what it dumps; a command run, where it leaves its dump.
    for (Property& p : side)
      if (p.name == "dump")
        p.schema = any_of_schema(p.schema.description,
                                 {string_schema("A command run: where it leaves its dump, relative to its directory "
                                                "(default: dump)."),
                                  p.schema});
    Schema side_run = object_schema("A run of the model.", side);
    std::vector<Property> properties = {
        optional("golden", any_of_schema("The reference: a dump path, or a run of the model (default: the model in "
                                         "eager mode through the plugin).",
                                         {string_schema("path of an existing dump"), side_run})),
        optional("target", side_run),
        optional("knob", string_schema("How a trial's switch configuration reaches the model: fusion_switch_file "
                                       "(plugin, TorchAir-style backends), inductor (plugin, switches.inductor_off), "
                                       "switch_file (${switch_file} in the command or switch_env).",
                                       {"fusion_switch_file", "inductor", "switch_file"})),
        optional("switch_env", string_schema("Environment variable that receives the trial's switch file path.")),
        optional("candidates", array_schema("The rules to bisect (default: those that fired in the all-on run).",
                                            plain_string_schema("rule name"))),
        optional("include", array_schema("Only candidates matching one of these globs.", plain_string_schema("glob"))),
        optional("exclude", array_schema("No candidate matching one of these globs.", plain_string_schema("glob"))),
        optional("fired_report", string_schema("The trial's fired-rule report, relative to its directory "
                                               "(default fusion_result.json; status.json for knob inductor).")),
        optional("judge", string_schema("compare (with the golden, default) or exit_code (0 passes).",
                                        {"compare", "exit_code"})),
        optional("judge_ops", array_schema("Compare these ops (regexes on op names) instead of the final outputs.",
                                           plain_string_schema("regex"))),
        tolerances_property("Tolerance overrides by preset name.", any_schema("preset fields")),
        optional("preset", string_schema("Tolerance preset for every row.")),
    };
    for (const Property& p : bisection_properties()) properties.push_back(p);
    return properties;
  }
  std::vector<std::string> result_fields() const override {
    return {"conclusion", "culprit",  "culprits",   "trials",   "new_trials",        "replayed_trials",
            "rounds",     "verified", "confidence", "category", "workaround_setting"};
  }
  std::string default_category() const override { return "fusion_defect"; }

  void check(const StepSpec& step, const CheckContext& context, Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    bool plugin = !context.workflow.model.script.empty();
    std::string knob = node["knob"] ? node["knob"].Scalar() : "";
    std::string judge = node["judge"] ? node["judge"].Scalar() : "compare";
    std::string where = "steps." + step.id;
    if (!plugin && (knob == "fusion_switch_file" || knob == "inductor"))
      diagnostics.error(node["knob"].Mark(), where + ".knob: '" + knob +
                                                 "' runs the model through the plugin; "
                                                 "give model.script, or use switch_file");
    if (!plugin && judge == "compare" && !node["golden"])
      diagnostics.error(node.Mark(), where +
                                         ": a command model needs golden: (a dump path or a run) to compare with, "
                                         "or judge: exit_code");
    for (const char* side : {"golden", "target"}) {
      if (!node[side] || !node[side].IsMap() || !node[side]["dump"]) continue;
      YAML::Node dump = node[side]["dump"];
      if (plugin == dump.IsScalar())
        diagnostics.error(dump.Mark(), where + "." + side + ".dump: " +
                                           (plugin ? "a run of the model's script takes the plugin's dump spec "
                                                     "({level: ..., include: ...}), not a path"
                                                   : "a command run takes the path where it leaves its dump"));
    }
    if (node["target"] && node["target"].IsMap())
      check_command_form(node["target"], where + ".target", false, diagnostics);
    if (node["golden"] && node["golden"].IsMap())
      check_command_form(node["golden"], where + ".golden", false, diagnostics);
    check_regexes(node["judge_ops"], where + ".judge_ops", diagnostics);
  }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto text = [&](const char* key) {
      return node[key] ? std::optional<std::string>(node[key].Scalar()) : std::nullopt;
    };
    auto o = std::make_shared<FusionBisectOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    o->knob = text("knob");
    o->fired_report = text("fired_report");
    o->switch_env = text("switch_env");
    o->exit_code = text("judge") == std::optional<std::string>("exit_code");
    o->golden = Side::parse(node["golden"], diagnostics);
    o->target = RunOverrides::parse(node["target"], diagnostics);
    o->judge_ops = strings(node["judge_ops"]);
    o->candidates = strings(node["candidates"]);
    o->include = strings(node["include"]);
    o->exclude = strings(node["exclude"]);
    o->search = bisection_options(step, context.workflow);
    return o;
  }

  // The golden run and the all-on trial and its first repeat, which earlier steps' runs can be:
  // graph_dump_compare's target lists the candidates (its dump only observes the same compiled
  // run), known_causes' experiments run it twice too (shared_runs.h).
  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    const FusionBisectOptions& o = context.options<FusionBisectOptions>();
    std::vector<PlannedRun> planned;
    if (!o.exit_code) planned = planned_golden(context, o.golden, o.judge_ops);
    // a switch_env set on the request afterwards would make it another run
    if (context.workflow().model.script.empty() || o.switch_env) return planned;
    const RunSpec spec = target_spec(context, o);
    const std::shared_ptr<RuleKnob> knob = FusionBisectStep::knob(context, o, spec);
    const RunSpec all_on = all_on_spec(*knob, spec);
    const int runs = 1 + std::min(o.search.baseline_repeats, 1);
    for (int repeat = 0; repeat < runs; ++repeat)
      planned.push_back(
          planned_plugin_run(context, bisect::trial_name({}, repeat), all_on, trial_side(o, *knob, all_on), repeat));
    return planned;
  }

  StepResult evaluate(const StepContext& context) const override {
    const FusionBisectOptions& o = context.options<FusionBisectOptions>();
    const bool plugin = !context.workflow().model.script.empty();
    const RunSpec target_spec = plugin ? FusionBisectStep::target_spec(context, o) : RunSpec();
    bisect::BisectionOutcome outcome;
    StepResult result = bisect_by(context, target_spec, FusionBisectStep::knob(context, o, target_spec), outcome);
    if (plugin && !o.knob && inductor_under_user_backend(target_spec, outcome))
      result = bisect_by(context, target_spec, std::make_shared<UserBackendInductorKnob>(), outcome);
    return result;
  }

 private:
  // The bisection of the target (`target_spec` for a plugin model) with `knob`, its outcome in `outcome`.
  StepResult bisect_by(const StepContext& context, const RunSpec& target_spec, const std::shared_ptr<RuleKnob>& knob,
                       bisect::BisectionOutcome& outcome) const {
    const FusionBisectOptions& o = context.options<FusionBisectOptions>();
    const Workflow& workflow = context.workflow();
    bool plugin = !workflow.model.script.empty();
    const RunSpec all_on = plugin ? all_on_spec(*knob, target_spec) : RunSpec();
    StepResult result;
    result.metrics["knob"] = knob->name();

    bisect::TrialSetup setup;
    setup.knob = knob;
    // The context is the engine's, which outlives the step; the rest the setup owns.
    setup.dir_of = [&context](const std::string& name) { return context.run_dir_of(name); };
    auto trial_runs = std::make_shared<std::vector<RunRecord>>();  // for the features their torch lacked
    // a torch without Inductor's pass switches leaves those rules out of the candidates
    auto with_torch_notes = [&](StepResult reported) {
      if (!knob->needed_features().empty()) note_unavailable_features(*trial_runs, reported, knob->needed_features());
      return reported;
    };
    setup.execute = [&context, trial_runs](const std::vector<RunRequest>& requests) {
      std::vector<RunRecord> records = context.run(requests);
      trial_runs->insert(trial_runs->end(), records.begin(), records.end());
      return records;
    };
    std::string model_cwd = context.path(workflow.model.command.cwd.value_or("."));
    std::string switch_env = o.switch_env.value_or("");
    setup.make_request = [&context, o, knob, plugin, all_on, target_spec, switch_env,
                          model_cwd](const bisect::Trial& trial) {
      RunRequest request;
      if (plugin) {
        // An all-on run is the target with nothing switched off: the k-th may be another step's.
        const bool all_on_trial = trial.off.empty();
        RunSpec spec = all_on_trial ? all_on : target_spec;
        if (!all_on_trial) knob->apply(trial, spec);
        request = plugin_run(context, trial.name, spec, trial_side(o, *knob, spec), trial.occurrence,
                             switch_env.empty() ? Sharing::Shareable : Sharing::OwnRun);
      } else {
        Workflow own = context.workflow();
        own.model.command = with_switch_file(own.model.command, trial.switch_file);
        StepContext trial_context(own, context.step(), context.state(), context.run_dir(),
                                  [&](const std::vector<RunRequest>& r) { return context.run(r); });
        request = trial_context.model_run(trial.name, side_with_switch_file(o.target.command, trial.switch_file));
      }
      if (!switch_env.empty()) request.env[switch_env] = trial.switch_file;
      if (!plugin) request.cwd = trial.dir;  // GE writes fusion_result.json into the working directory
      bisect::anchor_relative_paths(request, model_cwd);
      return request;
    };

    // The golden side; candidates listed, or what fired in the all-on run.
    bisect::BisectionPlan plan = bisection_plan(context, o.search, {{"knob", knob->name()}});
    if (o.exit_code) {
      setup.judge.kind = bisect::JudgeKind::ExitCode;
    } else {
      std::string problem = judge_against_golden(context, o.golden, o.target, o.judge_ops, setup, plan);
      if (!problem.empty()) return error_result(problem);
    }
    plan.candidates = o.candidates;
    plan.include = o.include;
    plan.exclude = o.exclude;

    bisect::Bisection driver(setup);
    outcome = driver.run(plan, {{"knob", knob->name()}});
    switch (outcome.status) {
      case bisect::BisectionOutcome::Status::NoRuleFired: return with_torch_notes(no_rule_fired(outcome));
      case bisect::BisectionOutcome::Status::Failed:
        if (std::optional<StepResult> golden_error = error_from_runs(outcome.alongside)) return *golden_error;
        return error_result(outcome.message + "; list the rules under candidates:");
      case bisect::BisectionOutcome::Status::NoCandidates:
        return with_torch_notes(error_result("no candidate rules" +
                                             std::string(outcome.listed ? " fired in the all-on run" : "") +
                                             " (after include/exclude)"));
      case bisect::BisectionOutcome::Status::Bisected: break;
    }
    return with_torch_notes(report(driver, outcome, *knob, std::move(result)));
  }

  // A user's backend (module:function) whose all-on run left no fusion switch file report while
  // Inductor compiled in it (status.json's inductor_rules): its rules are Inductor's.
  static bool inductor_under_user_backend(const RunSpec& target_spec, const bisect::BisectionOutcome& outcome) {
    if (target_spec.backend.value_or("").find(':') == std::string::npos || !outcome.listing_had_no_report ||
        outcome.status != bisect::BisectionOutcome::Status::NoRuleFired)
      return false;
    const std::optional<std::string> text = read_file(outcome.listing_dir + "/status.json");
    return text && !parse_plugin_status(nlohmann::json::parse(*text, nullptr, false)).inductor_rules.empty();
  }

  static RunSpec target_spec(const StepContext& context, const FusionBisectOptions& o) {
    RunSpec defaults = spec_of("compiled", dump_at(o.judge_ops.empty() ? "none" : "compiled"));
    if (!o.judge_ops.empty()) defaults.dump->include = o.judge_ops;
    return side_spec(context, o.target, defaults);
  }

  // The all-on trial: the target without the knob's own switch, which the other trials set.
  static RunSpec all_on_spec(const RuleKnob& knob, RunSpec spec) {
    if (spec.switches) knob.clear(*spec.switches);
    return spec;
  }

  // Each trial works in its own directory where files it writes there are read (a fired-rule
  // report other than status.json) or may clash (writes_into_cwd), else in the model's.
  static RunOverrides trial_side(const FusionBisectOptions& o, const RuleKnob& knob, const RunSpec& spec) {
    bool own = writes_into_cwd(spec) || knob.trials_in_own_directory();
    return own ? in_own_directory(o.target) : o.target;
  }

  // The knob the options name, else the one the model and its backend take. Its fired-rule
  // report, relative to a trial's run directory: fired_report, else GE's fusion_result.json,
  // which it writes into its working directory, or for Inductor the plugin's status.json.
  static std::shared_ptr<RuleKnob> knob(const StepContext& context, const FusionBisectOptions& o,
                                        const RunSpec& target_spec) {
    std::string kind = o.knob                                    ? *o.knob
                       : context.workflow().model.script.empty() ? "switch_file"
                       : target_spec.backend == "inductor"       ? "inductor"
                                                                 : "fusion_switch_file";
    auto report = [&](const char* otherwise) { return o.fired_report.value_or(otherwise); };
    if (kind == "inductor") return std::make_shared<InductorKnob>(report("status.json"));
    if (kind == "fusion_switch_file") return std::make_shared<PluginSwitchFileKnob>(report("fusion_result.json"));
    return std::make_shared<CommandSwitchFileKnob>(report("fusion_result.json"));
  }

  // A graph-mode run that fused nothing cannot owe its failure to a fusion rule: the flowchart
  // goes on with the other causes (a backend without fusion rules writes no report at all).
  static StepResult no_rule_fired(const bisect::BisectionOutcome& outcome) {
    StepResult result;
    result.status = StepStatus::Pass;
    result.summary = "no fusion rule fired in the all-on run (" + outcome.listing_run + " left " +
                     outcome.listing_report + "): " +
                     (outcome.listing_had_no_report ? "the backend reports no rules that could be switched off"
                                                    : "the failure does not come from a fusion rule");
    result.metrics["conclusion"] = conclusion_name(bisect::Conclusion::NotFusion);
    result.metrics["culprits"] = nlohmann::json::array();
    return result;
  }

  StepResult report(const bisect::Bisection& driver, const bisect::BisectionOutcome& outcome, const RuleKnob& knob,
                    StepResult result) const {
    const bisect::Result& bisection = outcome.result;
    add_bisection_evidence(driver, outcome, "rules_off", result);
    record_bisection(bisection, result);
    bisect::Config culprits = bisection.culprits_off();
    result.metrics["culprits"] = culprits;

    auto command_of = [&](const bisect::Config& off) {
      RunRequest request = driver.replay(off);
      return reproduce_command(request.cwd, request.env, request.argv);
    };
    for (const bisect::CulpritSet& set : bisection.culprit_sets) {
      if (set.rules.size() == 1)
        result.findings.push_back({"fusion rule " + set.rules.front() +
                                       " breaks precision: with it on the target "
                                       "fails, with only it switched off it passes",
                                   set.rules.front()});
      else
        result.findings.push_back({"fusion rules " + joined(set.rules, " + ") +
                                       " break precision only together "
                                       "(each without the others passes)",
                                   joined(set.rules, "+")});
      result.reproduce.push_back("# last passing configuration (off: " + joined(set.last_passing) + ")");
      result.reproduce.push_back(command_of(set.last_passing));
      result.reproduce.push_back("# first failing configuration (off: " + joined(set.first_failing) + ")");
      result.reproduce.push_back(command_of(set.first_failing));
    }
    for (const std::string& note : bisection.confidence_notes) result.findings.push_back({note, ""});
    for (const std::string& rule : bisection.unswitchable)
      result.findings.push_back({"rule " + rule + " kept firing when switched off: its trials were invalid", rule});

    switch (bisection.conclusion) {
      case bisect::Conclusion::CulpritsFound: {
        result.status = StepStatus::Fail;
        result.metrics["culprit"] = joined(culprits, "+");
        result.evidence.push_back(
            {"file", "workaround: switch file turning only the culprits off", outcome.workaround_path, nullptr});
        knob.add_workaround(culprits, result);
        knob.name_user_passes(bisection, result);
        result.reproduce.push_back("# the workaround (culprits off)");
        result.reproduce.push_back(command_of(knob.workaround_off(culprits)));
        break;
      }
      case bisect::Conclusion::NoFailure:
      case bisect::Conclusion::NotFusion: result.status = StepStatus::Pass; break;
      default:
        result.status = StepStatus::Error;
        if (!bisection.unresolved.empty())
          result.findings.push_back({"narrowed to: " + joined(bisection.unresolved), ""});
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<StepKind> make_fusion_bisect_step() { return std::make_unique<FusionBisectStep>(); }

}  // namespace diagnose
