// `eager_device_vs_cpu`: the model in eager mode on the device / configuration under test
// against eager on CPU in the same dtype, op by op; with `referee: true` each CPU record
// carries its float64 truth and a row fails where the device is further from it than the CPU
// is. A failure here means the problem exists without graph mode.
#include "orchestrator/engine/run_dir.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/plugin_runs/plugin_run.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

struct ComparedRun {
  std::string name;
  RunSpec spec;
  RunOverrides overrides;
};

// The step's keys.
struct EagerDeviceVsCpuOptions : ComparingOptions {
  RunOverrides golden, target;              // of the CPU run and of the run under test
  bool truth_referee = false;               // referee: true, the golden run computes every op's float64 truth
  std::optional<RunOverrides> referee_run;  // of a separate float64 CPU run; absent when there is none
};

// golden, target and, when the referee is a run of its own, referee.
std::vector<ComparedRun> compared_runs(const StepContext& context) {
  const EagerDeviceVsCpuOptions& o = context.options<EagerDeviceVsCpuOptions>();
  RunSpec target_spec = side_spec(context, o.target, kEagerAtenRun);
  RunSpec cpu = kEagerAtenRun;
  cpu.device = "cpu";
  cpu.dtype = target_spec.dtype;
  cpu.autocast = target_spec.autocast;
  if (o.truth_referee) cpu.dump_request().truth = true;
  RunSpec referee = cpu;
  referee.dtype = "float64";
  referee.autocast.reset();
  std::vector<ComparedRun> runs = {{"golden", side_spec(context, o.golden, cpu), o.golden},
                                   {"target", target_spec, o.target}};
  if (o.referee_run) runs.push_back({"referee", side_spec(context, *o.referee_run, referee), *o.referee_run});
  return runs;
}

class EagerDeviceVsCpuStep : public StepKind {
 public:
  EagerDeviceVsCpuStep()
      : StepKind("eager_device_vs_cpu",
                 "Eager mode on the device/configuration under test (target, default: the model's) against eager on "
                 "CPU in the same dtype (golden), op by op, judged against the CPU run's float64 truth with `referee: "
                 "true`; fails when the kernels under test are further from it than the CPU's, naming the first "
                 "divergence and the ops where the error starts.") {}
  std::vector<Property> parameters() const override {
    return with_comparison_properties({
        optional("golden", plugin_side_schema("Overrides of the reference run (default: eager on cpu in the "
                                              "target's dtype; golden: {dtype: float32} for a float32 reference).")),
        optional("target", plugin_side_schema("Overrides of the run under test (default: eager on the model's device "
                                              "and dtype).")),
        optional("referee", any_of_schema("The float64 truth of the golden side.",
                                          {boolean_schema("true: the golden run also computes every op in float64 "
                                                          "(shadow execution, same records)"),
                                           plugin_side_schema("overrides of a separate float64 CPU run, paired by "
                                                              "record identity")})),
    });
  }
  std::vector<std::string> result_fields() const override {
    return {"rows", "compared", "passed", "failed", "first_failing_op", "source_ops", "culprit", "nan_origin"};
  }
  std::string default_category() const override { return "eager_device_defect"; }
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    const YAML::Node& node = step.node;
    auto o = std::make_shared<EagerDeviceVsCpuOptions>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    o->golden = RunOverrides::parse(node["golden"], diagnostics);
    o->target = RunOverrides::parse(node["target"], diagnostics);
    const YAML::Node referee = node["referee"];
    o->truth_referee = referee && !referee.IsMap() && yaml_to_json(referee) == true;
    if (referee && referee.IsMap()) o->referee_run = RunOverrides::parse(referee, diagnostics);
    return o;
  }

  std::vector<PlannedRun> planned_runs(const StepContext& context) const override {
    std::vector<PlannedRun> planned;
    for (const ComparedRun& side : compared_runs(context))
      planned.push_back(planned_plugin_run(context, side.name, side.spec, side.overrides));
    return planned;
  }

  StepResult evaluate(const StepContext& context) const override {
    std::vector<RunRequest> requests;
    for (const ComparedRun& side : compared_runs(context))
      requests.push_back(plugin_run(context, side.name, side.spec, side.overrides));
    std::vector<RunRecord> runs = context.run(requests);
    if (std::optional<StepResult> error = error_from_runs(runs)) return *error;

    std::optional<std::string> referee_dump;
    if (requests.size() > 2) referee_dump = requests[2].dump_dir;
    return judge_run_dumps(context, requests, runs, requests[0].dump_dir, requests[1].dump_dir, referee_dump,
                           "eager on the target disagrees with eager on CPU: ", "eager on CPU");
  }
};

}  // namespace

std::unique_ptr<StepKind> make_eager_device_vs_cpu_step() { return std::make_unique<EagerDeviceVsCpuStep>(); }

}  // namespace diagnose
