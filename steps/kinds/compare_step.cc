// `compare`: the comparison core on two dump locations. Each side is a path, or a
// run of the model (with its own args/env) whose dump is compared once it ends.
#include "orchestrator/engine/step.h"
#include "orchestrator/exec/command_line.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "orchestrator/workflow/workflow_schema.h"
#include "steps/judgement/dump_judgement.h"
#include "steps/judgement/nan_origin.h"
#include "steps/plugin_runs/side.h"

namespace diagnose {

namespace {

const char* kSides[] = {"golden", "target", "referee"};

Schema side_schema(const std::string& description) {
  std::vector<Property> run_properties = command_properties();
  run_properties.push_back(optional("dump", string_schema("Where the run leaves its dump. Default: ${run.dump_dir}.")));
  return any_of_schema(description, {string_schema("path of an existing dump (file or directory)"),
                                     object_schema("a run of the model whose dump is compared", run_properties)});
}

class CompareStep : public StepKind {
 public:
  CompareStep()
      : StepKind("compare",
                 "Compare a golden dump with a target dump using the comparison core; fails when any compared row "
                 "is out of tolerance.") {}
  std::vector<Property> parameters() const override {
    return with_comparison_properties(
        {required("golden", side_schema("The reference side: a dump path, or a run of the model.")),
         required("target", side_schema("The side under suspicion: a dump path, or a run of the model.")),
         optional("referee", side_schema("A float64 dump of the golden run, for three-way judgement."))});
  }
  std::vector<std::string> result_fields() const override {
    return {"rows",       "compared",  "passed",    "failed", "not_comparable", "first_failing_op",
            "source_ops", "unmatched", "nan_origin"};
  }
  std::string default_category() const override { return "precision_problem"; }

  void check(const StepSpec& step, const CheckContext&, Diagnostics& diagnostics) const override {
    for (const char* side : kSides) {
      YAML::Node node = step.node[side];
      if (node && node.IsMap()) check_command_form(node, "steps." + step.id + "." + side, false, diagnostics);
    }
  }

  // The sides given (golden, target, referee when given): the path of a dump, or a run of the
  // model and where it leaves its dump; and the comparison settings.
  struct Options : ComparingOptions {
    std::map<std::string, Side> sides;
  };
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext& context,
                                           Diagnostics& diagnostics) const override {
    auto o = std::make_shared<Options>();
    o->comparison = parse_comparison_settings(step, context.workflow, diagnostics);
    for (const char* name : kSides) {
      const YAML::Node node = step.node[name];
      if (node) o->sides[name] = Side::parse(node, diagnostics);
    }
    return o;
  }

  StepResult evaluate(const StepContext& context) const override {
    const std::map<std::string, Side>& sides = context.options<Options>().sides;
    std::vector<RunRequest> requests;
    for (const char* side : kSides) {
      auto it = sides.find(side);
      if (it != sides.end() && !it->second.path) requests.push_back(context.model_run(side, it->second.run.command));
    }
    std::vector<RunRecord> runs = context.run(requests);
    if (std::optional<StepResult> error = error_from_runs(runs)) return *error;
    auto side_path = [&](const char* side) -> std::string {
      const Side& given = sides.at(side);
      return given.path ? context.path(*given.path)
                        : context.path(given.run.dump_path.value_or("${run.dump_dir}"), side);
    };

    std::optional<std::string> referee;
    if (sides.count("referee")) referee = side_path("referee");
    DumpJudgement judgement =
        judge_dumps(context, side_path("golden"), side_path("target"), referee, context.step_dir() + "/compare");
    StepResult& result = judgement.result;
    report_nan_origins(side_path("golden"), side_path("target"), result);
    std::vector<std::string> reproduce;
    for (const RunRecord& run : runs) reproduce.push_back(reproduce_command(run.cwd, run.env, run.argv));
    result.reproduce.insert(result.reproduce.begin(), reproduce.begin(), reproduce.end());
    return result;
  }
};

}  // namespace

std::unique_ptr<StepKind> make_compare_step() { return std::make_unique<CompareStep>(); }

}  // namespace diagnose
