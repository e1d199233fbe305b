// What the workflow format knows of a step kind: its name, its keys, the results it exposes to
// conditions and the checks its schema cannot express. Loading and validating a workflow needs
// no more; the engine's StepKind (engine/step.h) adds what a step of the kind does, and the
// engine's registry (engine/step_registry.h) declares every kind it registers here.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/workflow/diagnostics.h"
#include "orchestrator/workflow/schema.h"
#include "orchestrator/workflow/workflow.h"

namespace diagnose {

// What `diagnose validate` knows about the other steps while checking one.
struct CheckContext {
  const Workflow& workflow;
  int step_index;
};

class StepKindDeclaration {
 public:
  StepKindDeclaration(std::string name, std::string description)
      : name_(std::move(name)), description_(std::move(description)) {}
  virtual ~StepKindDeclaration() = default;
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // Kind-specific keys of a step, next to id/kind/when/on_failure/diagnoses.
  virtual std::vector<Property> parameters() const = 0;
  // Metrics the step's result exposes to conditions as steps.<id>.<field>.
  virtual std::vector<std::string> result_fields() const { return {}; }
  // Checks the schema cannot express (argv and shell together, ...).
  virtual void check(const StepSpec&, const CheckContext&, Diagnostics&) const {}
  // The step's keys parsed and checked once, at load, after check(): what is wrong goes to
  // `diagnostics` with its position. Null: the kind keeps no options of its own.
  virtual std::shared_ptr<const StepOptions> parse(const StepSpec&, const CheckContext&, Diagnostics&) const {
    return nullptr;
  }
  // For parse(): the step's key `name`, or the default parameters() declares (schema.h's
  // defaulted); throws std::logic_error for a key without a declared default.
  template <typename T>
  T option(const StepSpec& step, const std::string& name) const {
    const YAML::Node value = step.node[name];
    return value ? value.as<T>() : option_default(name).get<T>();
  }
  nlohmann::json option_default(const std::string& name) const;

 private:
  std::string name_, description_;
};

// Adds a kind the workflow format accepts; it must outlive every workflow loaded. Throws
// std::logic_error when a kind of that name is declared already.
void declare_step_kind(const StepKindDeclaration& kind);
// In declaration order.
const std::vector<const StepKindDeclaration*>& declared_step_kinds();
// nullptr when no kind has that name.
const StepKindDeclaration* find_declared_step_kind(const std::string& name);
std::vector<std::string> step_kind_names();

}  // namespace diagnose
