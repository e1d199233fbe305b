// `assert`: fails when a condition on earlier steps' results holds, e.g.
//   fail_if: steps.compare.failed > 3
#include "orchestrator/engine/result_lookup.h"
#include "orchestrator/engine/step.h"
#include "orchestrator/workflow/condition.h"
#include "orchestrator/workflow/template.h"

namespace diagnose {

namespace {

class AssertStep : public StepKind {
 public:
  AssertStep() : StepKind("assert", "Fail when a condition on earlier steps' results holds; runs no process.") {}
  std::vector<Property> parameters() const override {
    return {required("fail_if", condition_schema("The step fails when this condition holds.")),
            optional("message", string_schema("What a failure means, shown as the finding; ${...} is expanded."))};
  }

  struct Options : StepOptions {
    std::string fail_if;
    std::optional<std::string> message;
  };
  std::shared_ptr<const StepOptions> parse(const StepSpec& step, const CheckContext&, Diagnostics&) const override {
    auto o = std::make_shared<Options>();
    o->fail_if = step.node["fail_if"].Scalar();
    if (step.node["message"]) o->message = step.node["message"].Scalar();
    return o;
  }

  StepResult evaluate(const StepContext& context) const override {
    const Options& o = context.options<Options>();
    const std::string& text = o.fail_if;
    Condition condition = Condition::parse(text);
    auto lookup = [&](const std::string& name) { return result_value(context.state(), context.run_dir(), name); };
    StepResult result;
    for (const ConditionReference& r : condition.references())
      result.evidence.push_back({"metric", r.name, "", lookup(r.name)});
    if (!condition.evaluate(lookup)) {
      result.status = StepStatus::Pass;
      result.summary = "`" + text + "` does not hold";
      return result;
    }
    result.status = StepStatus::Fail;
    result.summary = "`" + text + "` holds";
    std::string message = result.summary;
    if (o.message) {
      message = *o.message;
      try {
        message = context.expand(message);
      } catch (const TemplateError&) {
        // A value the message mentions does not exist (e.g. no divergence): keep it as written.
      }
    }
    result.findings.push_back({message, ""});
    return result;
  }
};

}  // namespace

std::unique_ptr<StepKind> make_assert_step() { return std::make_unique<AssertStep>(); }

}  // namespace diagnose
