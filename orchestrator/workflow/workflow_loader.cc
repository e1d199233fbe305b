#include "orchestrator/workflow/workflow_loader.h"

#include <boost/filesystem.hpp>

#include "orchestrator/util/files.h"
#include "orchestrator/util/paths.h"
#include "orchestrator/workflow/step_kind_declaration.h"
#include "orchestrator/workflow/validate.h"
#include "orchestrator/workflow/workflow_schema.h"

namespace diagnose {

namespace fs = boost::filesystem;

const StepSpec* Workflow::find_step(const std::string& id) const {
  int i = step_index(id);
  return i < 0 ? nullptr : &steps[static_cast<size_t>(i)];
}

int Workflow::step_index(const std::string& id) const {
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].id == id) return static_cast<int>(i);
  return -1;
}

namespace {

std::vector<std::string> string_list(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node && node.IsSequence())
    for (const YAML::Node& item : node) out.push_back(item.Scalar());
  return out;
}

template <typename T>
std::optional<T> optional_value(const YAML::Node& node, const char* key) {
  if (!node || !node[key]) return std::nullopt;
  return node[key].as<T>();
}

void check_steps(const YAML::Node& steps, Diagnostics& diagnostics, const StringVisitor& visitor, int& current_step) {
  if (!steps || !steps.IsSequence()) return;  // the top-level check reported it
  std::vector<std::string> kinds = step_kind_names();
  int index = 0;
  for (const YAML::Node& step : steps) {
    current_step = index;
    std::string where = "steps[" + std::to_string(index) + "]";
    ++index;
    if (!step.IsMap()) {
      diagnostics.error(step.Mark(), where + " must be a mapping with id and kind");
      continue;
    }
    if (step["id"] && step["id"].IsScalar() && !step["id"].Scalar().empty()) where = "steps." + step["id"].Scalar();
    YAML::Node kind = step["kind"];
    if (!kind) {
      diagnostics.error(step.Mark(), where + ": missing required key 'kind'");
      continue;
    }
    const StepKindDeclaration* step_kind = kind.IsScalar() ? find_declared_step_kind(kind.Scalar()) : nullptr;
    if (!step_kind) {
      std::string known;
      for (const std::string& k : kinds) known += (known.empty() ? "" : ", ") + k;
      std::string text = kind.IsScalar() ? kind.Scalar() : "";
      diagnostics.error(kind.Mark(), where + ": unknown step kind '" + text + "'" + did_you_mean(text, kinds) +
                                         "; known kinds: " + known);
      continue;
    }
    check_against_schema(step, step_schema(*step_kind), where, diagnostics, visitor);
  }
  current_step = -1;
}

Workflow build_workflow(const YAML::Node& root, const std::string& path, const std::string& text) {
  Workflow w;
  w.path = path;
  w.dir = absolute_path(fs::path(path).parent_path().string(), fs::current_path().string());
  w.text = text;
  w.root = root;
  w.name = root["name"] ? root["name"].Scalar() : fs::path(path).stem().string();
  w.model.command = parse_command(root["model"]);
  if (YAML::Node model = root["model"]) {
    if (model["script"]) w.model.script = model["script"].Scalar();
    if (model["python"]) w.model.python = model["python"].Scalar();
    if (model["backend"]) w.model.backend = model["backend"].Scalar();
    if (model["device"]) w.model.device = model["device"].Scalar();
    if (model["dtype"]) w.model.dtype = model["dtype"].Scalar();
  }

  YAML::Node defaults = root["defaults"];
  if (defaults) {
    if (auto v = optional_value<int>(defaults, "slots")) w.defaults.slots = *v;
    if (auto v = optional_value<std::string>(defaults, "output_dir")) w.defaults.output_dir = *v;
    if (auto v = optional_value<double>(defaults, "timeout")) w.defaults.timeout_s = *v;
    if (auto v = optional_value<double>(defaults, "kill_grace")) w.defaults.kill_grace_s = *v;
    if (auto v = optional_value<int64_t>(defaults, "dump_budget")) w.defaults.dump_budget = *v;
    if (defaults["tolerances"]) w.defaults.tolerance_overrides = tolerance_overrides(defaults["tolerances"]);
  }

  for (const YAML::Node& node : root["steps"]) {
    StepSpec step;
    step.id = node["id"].Scalar();
    step.kind = node["kind"].Scalar();
    if (node["when"]) step.when = node["when"].Scalar();
    if (node["on_failure"])
      step.on_failure = node["on_failure"].Scalar() == "continue" ? OnFailure::Continue : OnFailure::Stop;
    if (node["diagnoses"]) step.diagnoses = node["diagnoses"].Scalar();
    step.node = node;
    w.steps.push_back(step);
  }

  YAML::Node verdict = root["verdict"];
  if (verdict) {
    w.verdict.order = string_list(verdict["order"]);
    if (verdict["advice"])
      for (const auto& entry : verdict["advice"]) w.verdict.advice[entry.first.Scalar()] = entry.second.Scalar();
  }
  if (root["report"] && root["report"]["formats"]) w.report.formats = string_list(root["report"]["formats"]);
  return w;
}

// `extends: BASE.yaml`: the base workflow (checked on its own first) with this file's
// top-level keys in place of the base's (typically just model:), but never the base's name:
// without a name of its own, a workflow is named after its file. `base_path` gets the base's path.
std::optional<YAML::Node> extend(const YAML::Node& root, const std::string& path, Diagnostics& diagnostics,
                                 std::string& base_path) {
  YAML::Node extends = root["extends"];
  if (!extends.IsScalar() || extends.Scalar().empty()) {
    diagnostics.error(extends.Mark(), "extends: give the path of a workflow file");
    return std::nullopt;
  }
  base_path = absolute_path(extends.Scalar(), fs::path(path).parent_path().string());
  try {  // one level only: no chains, no cycles
    YAML::Node raw = YAML::LoadFile(base_path);
    if (raw.IsMap() && raw["extends"]) {
      diagnostics.error(extends.Mark(), "extends: " + base_path + " extends another workflow itself; extend that one");
      return std::nullopt;
    }
  } catch (const YAML::Exception&) {
    // load_workflow below reports it with its position
  }
  Diagnostics base_diagnostics(base_path);
  std::optional<Workflow> base = load_workflow(base_path, base_diagnostics);
  for (const Diagnostic& d : base_diagnostics.list()) {
    std::string where = d.file + (d.line > 0 ? ":" + std::to_string(d.line) + ":" + std::to_string(d.column) : "");
    diagnostics.error(extends.Mark(), "extends: " + where + ": " + d.message);
  }
  if (!base) return std::nullopt;
  YAML::Node merged = YAML::Clone(base->root);
  merged.remove("name");
  // An inherited model keeps its positions (YAML::Clone drops them) for errors about its paths,
  // which name the base file (check_model_paths).
  if (!root["model"] && base->root["model"]) merged["model"] = base->root["model"];
  for (const auto& entry : root)
    if (entry.first.Scalar() != "extends") merged[entry.first.Scalar()] = entry.second;
  return merged;
}

}  // namespace

CommandSpec parse_command(const YAML::Node& node) {
  CommandSpec c;
  if (!node || !node.IsMap()) return c;
  c.argv = string_list(node["argv"]);
  if (node["shell"]) c.shell = node["shell"].Scalar();
  c.args = string_list(node["args"]);
  if (node["env"])
    for (const auto& entry : node["env"]) c.env[entry.first.Scalar()] = entry.second.Scalar();
  if (node["cwd"]) c.cwd = node["cwd"].Scalar();
  c.timeout_s = optional_value<double>(node, "timeout");
  c.retries = optional_value<int>(node, "retries");
  c.outputs = string_list(node["outputs"]);
  return c;
}

std::optional<Workflow> load_workflow(const std::string& path, Diagnostics& diagnostics) {
  std::optional<std::string> text = read_file(path);
  if (!text) {
    diagnostics.error_in_file("cannot read the workflow file");
    return std::nullopt;
  }
  return load_workflow_text(*text, path, diagnostics);
}

std::optional<Workflow> load_workflow_text(const std::string& text, const std::string& path, Diagnostics& diagnostics) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    diagnostics.error(e.mark, "YAML syntax: " + e.msg);
    return std::nullopt;
  }
  if (!root.IsMap()) {
    diagnostics.error(root.Mark(), "a workflow must be a mapping with model and steps");
    return std::nullopt;
  }
  std::string model_source = path;
  if (root["extends"]) {
    std::string base_path;
    std::optional<YAML::Node> extended = extend(root, path, diagnostics, base_path);
    if (!extended) return std::nullopt;
    if (!root["model"]) model_source = base_path;
    root = *extended;
  }

  std::vector<StringUse> strings;
  int current_step = -1;
  StringVisitor visitor;
  visitor.on_template = [&](const YAML::Node& node, const std::string& s) {
    strings.push_back({current_step, node, s, false});
  };
  visitor.on_condition = [&](const YAML::Node& node, const std::string& s) {
    strings.push_back({current_step, node, s, true});
  };

  Schema top = workflow_schema();
  for (Property& p : top.properties)
    if (p.name == "steps") p.schema = array_schema(p.schema.description, any_schema("a step"));
  check_against_schema(root, top, "", diagnostics, visitor);
  check_steps(root["steps"], diagnostics, visitor, current_step);
  if (root["steps"] && root["steps"].IsSequence() && root["steps"].size() == 0)
    diagnostics.error(root["steps"].Mark(), "steps: a workflow needs at least one step");
  if (!diagnostics.empty()) return std::nullopt;

  Workflow workflow;
  try {
    workflow = build_workflow(root, path, text);
    workflow.model_source = model_source;
  } catch (const YAML::Exception& e) {
    diagnostics.error(e.mark, e.msg);
    return std::nullopt;
  }
  validate_workflow(workflow, strings, diagnostics);
  if (!diagnostics.empty()) return std::nullopt;
  return workflow;
}

}  // namespace diagnose
