#include "orchestrator/workflow/validate.h"

#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <boost/filesystem.hpp>

#include "compare/judge.h"
#include "orchestrator/util/paths.h"
#include "orchestrator/workflow/condition.h"
#include "orchestrator/workflow/step_kind_declaration.h"
#include "orchestrator/workflow/template.h"
#include "orchestrator/workflow/workflow_schema.h"

namespace diagnose {

namespace fs = boost::filesystem;

namespace {

const std::vector<std::string> kCommonResultFields = {"status", "summary", "dir", "dump_dir", "exit_code", "runs"};
const std::vector<std::string> kRunFields = {"status", "dir", "dump_dir", "exit_code"};
const std::vector<std::string> kTopLevelNames = {"run_dir",      "workflow_dir",  "workflow_name", "step.id",
                                                 "step.dir",     "step.dump_dir", "run.name",      "run.dir",
                                                 "run.dump_dir", "switch_file"};  // fusion_bisect trials only

bool valid_id(const std::string& id) {
  if (id.empty()) return false;
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// A reference from one step to another, where it was written.
struct Edge {
  int from, to;
  YAML::Mark mark;
};

class ReferenceChecker {
 public:
  ReferenceChecker(const Workflow& workflow, Diagnostics& diagnostics)
      : workflow_(workflow), diagnostics_(diagnostics) {}

  void check(const StringUse& use) {
    if (use.condition) {
      try {
        Condition condition = Condition::parse(use.text);
        for (const ConditionReference& r : condition.references())
          check_step_reference(use, r.name, r.offset, "in condition");
      } catch (const ConditionError& e) {
        diagnostics_.error(mark_within(workflow_.text, use.node, e.offset), std::string("condition: ") + e.what());
      }
      return;
    }
    std::vector<TemplateReference> references;
    try {
      references = template_references(use.text);
    } catch (const TemplateError& e) {
      diagnostics_.error(mark_within(workflow_.text, use.node, e.offset), std::string("template: ") + e.what());
      return;
    }
    for (const TemplateReference& r : references) {
      const std::string& name = r.name;
      if (name.rfind("steps.", 0) == 0) {
        check_step_reference(use, name, r.offset, "in template");
      } else if (name.rfind("env.", 0) == 0 && name.size() > 4) {
        continue;
      } else if (std::find(kTopLevelNames.begin(), kTopLevelNames.end(), name) == kTopLevelNames.end()) {
        std::vector<std::string> known = kTopLevelNames;
        known.push_back("steps.<id>.<field>");
        known.push_back("env.<NAME>");
        diagnostics_.error(
            mark_within(workflow_.text, use.node, r.offset),
            "unknown reference '${" + name + "}'" + did_you_mean(name, kTopLevelNames) +
                "; known: run_dir, workflow_dir, workflow_name, step.*, run.*, steps.<id>.<field>, env.<NAME>");
      }
    }
  }

  // Cycles first (each reported once), then references to later steps outside cycles.
  void report_order_problems() {
    std::map<int, std::vector<Edge>> out;
    for (const Edge& e : edges_) out[e.from].push_back(e);
    std::set<std::pair<int, int>> in_cycle;
    std::vector<int> colour(workflow_.steps.size(), 0);  // 0 new, 1 on the path, 2 done
    std::vector<int> path;
    std::function<void(int)> visit = [&](int node) {
      colour[static_cast<size_t>(node)] = 1;
      path.push_back(node);
      for (const Edge& e : out[node]) {
        if (colour[static_cast<size_t>(e.to)] == 1) {
          auto start = std::find(path.begin(), path.end(), e.to);
          std::string description;
          for (auto it = start; it != path.end(); ++it) {
            description += workflow_.steps[static_cast<size_t>(*it)].id + " -> ";
            if (it + 1 != path.end()) in_cycle.insert({*it, *(it + 1)});
          }
          description += workflow_.steps[static_cast<size_t>(e.to)].id;
          in_cycle.insert({e.from, e.to});
          diagnostics_.error(e.mark, "cycle in step references: " + description);
        } else if (colour[static_cast<size_t>(e.to)] == 0) {
          visit(e.to);
        }
      }
      path.pop_back();
      colour[static_cast<size_t>(node)] = 2;
    };
    for (size_t i = 0; i < workflow_.steps.size(); ++i)
      if (colour[i] == 0) visit(static_cast<int>(i));
    for (const Edge& e : edges_) {
      if (e.to > e.from && !in_cycle.count({e.from, e.to}))
        diagnostics_.error(e.mark, "step '" + workflow_.steps[static_cast<size_t>(e.from)].id + "' refers to step '" +
                                       workflow_.steps[static_cast<size_t>(e.to)].id +
                                       "', which comes later (steps run in the order written)");
    }
  }

 private:
  void check_step_reference(const StringUse& use, const std::string& name, size_t offset, const char* context) {
    YAML::Mark mark = mark_within(workflow_.text, use.node, offset);
    std::vector<std::string> parts;
    std::stringstream split(name);
    for (std::string part; std::getline(split, part, '.');) parts.push_back(part);
    if (parts.size() < 3) {
      diagnostics_.error(mark, std::string("reference '") + name + "' " + context + " must be steps.<id>.<field>");
      return;
    }
    const std::string& id = parts[1];
    int target = workflow_.step_index(id);
    if (target < 0) {
      std::vector<std::string> ids;
      for (const StepSpec& s : workflow_.steps) ids.push_back(s.id);
      diagnostics_.error(mark, "reference to unknown step '" + id + "'" + did_you_mean(id, ids));
      return;
    }
    if (use.step_index < 0) {
      diagnostics_.error(mark, "'" + name + "': only steps can refer to other steps' results");
      return;
    }
    const StepSpec& step = workflow_.steps[static_cast<size_t>(target)];
    std::vector<std::string> fields = kCommonResultFields;
    if (const StepKindDeclaration* kind = find_declared_step_kind(step.kind))
      for (const std::string& f : kind->result_fields()) fields.push_back(f);
    const std::string& field = parts[2];
    if (std::find(fields.begin(), fields.end(), field) == fields.end()) {
      diagnostics_.error(mark, "step '" + id + "' (kind " + step.kind + ") has no result field '" + field + "'" +
                                   did_you_mean(field, fields));
      return;
    }
    if (field == "runs" &&
        (parts.size() != 5 || std::find(kRunFields.begin(), kRunFields.end(), parts[4]) == kRunFields.end())) {
      diagnostics_.error(mark, "'" + name + "' must be steps." + id + ".runs.<run>.<status|dir|dump_dir|exit_code>");
      return;
    }
    if (field != "runs" && parts.size() > 3) {
      diagnostics_.error(mark, "'" + name + "': field '" + field + "' has no sub-fields");
      return;
    }
    edges_.push_back({use.step_index, target, mark});
  }

  const Workflow& workflow_;
  Diagnostics& diagnostics_;
  std::vector<Edge> edges_;
};

}  // namespace

void check_command_form(const YAML::Node& node, const std::string& where, bool needs_command,
                        Diagnostics& diagnostics) {
  if (!node || !node.IsMap()) return;
  int forms = (node["argv"] ? 1 : 0) + (node["shell"] ? 1 : 0);
  if (node["argv"] && node["shell"])
    diagnostics.error(node["shell"].Mark(), where + ": give either argv or shell, not both");
  if (node["args"] && forms > 0)
    diagnostics.error(node["args"].Mark(), where + ": args extends the model's command; it cannot be used with " +
                                               (node["argv"] ? "argv" : "shell"));
  if (needs_command && forms == 0) diagnostics.error(node.Mark(), where + ": missing 'argv' or 'shell'");
  if (node["argv"] && node["argv"].IsSequence() && node["argv"].size() == 0)
    diagnostics.error(node["argv"].Mark(), where + ": argv must name a program");
  if (node["shell"] && node["shell"].IsScalar() && node["shell"].Scalar().empty())
    diagnostics.error(node["shell"].Mark(), where + ": shell must not be empty");
  if (node["env"] && node["env"].IsMap()) {
    for (const auto& variable : node["env"]) {
      const std::string name = variable.first.Scalar();
      if (name.empty() || name.find('=') != std::string::npos || name.find('\0') != std::string::npos)
        diagnostics.error(variable.first.Mark(), where + ".env: '" + name + "' is not a valid variable name");
    }
  }
}

// Exactly one of argv, shell or script; args only with script.
static void check_model(const YAML::Node& model, Diagnostics& diagnostics) {
  if (!model || !model.IsMap() || !model["script"]) {
    if (model && model.IsMap() && model["args"] && !model["argv"] && !model["shell"])
      diagnostics.error(model["args"].Mark(), "model: args are the arguments of a script; give script too");
    else
      check_command_form(model, "model", true, diagnostics);
    return;
  }
  for (const char* key : {"argv", "shell"})
    if (model[key])
      diagnostics.error(model[key].Mark(), std::string("model: give either script or ") + key + ", not both");
  if (model["script"].IsScalar() && model["script"].Scalar().empty())
    diagnostics.error(model["script"].Mark(), "model: script must name a file");
  check_command_form(model, "model", false, diagnostics);
}

void check_model_paths(const Workflow& workflow, Diagnostics& diagnostics) {
  YAML::Node model = workflow.root["model"];
  if (!model || !model.IsMap()) return;
  // An inherited model's relative paths start at the extending file's directory, not at the base's.
  std::string inherited =
      workflow.model_source == workflow.path ? "" : " (relative to " + workflow.path + ", which extends this file)";
  auto check = [&](const char* key, bool directory) {
    YAML::Node value = model[key];
    if (!value || !value.IsScalar() || value.Scalar().empty() || value.Scalar().find("${") != std::string::npos) return;
    std::string resolved = absolute_path(value.Scalar(), workflow.dir);
    boost::system::error_code error;
    fs::file_status status = fs::status(resolved, error);
    if (directory ? fs::is_directory(status) : fs::is_regular_file(status)) return;
    std::string problem = !fs::exists(status) ? "does not exist" : directory ? "is not a directory" : "is not a file";
    diagnostics.error_in(workflow.model_source, value.Mark(),
                         std::string("model.") + key + ": " + resolved + " " + problem + inherited);
  };
  check("script", false);
  check("cwd", true);
}

YAML::Mark mark_within(const std::string& file_text, const YAML::Node& node, size_t offset) {
  YAML::Mark mark = node.Mark();
  if (mark.pos < 0) return mark;
  size_t pos = static_cast<size_t>(mark.pos);
  if (pos < file_text.size() && (file_text[pos] == '"' || file_text[pos] == '\'')) offset += 1;
  mark.pos += static_cast<int>(offset);
  mark.column += static_cast<int>(offset);
  return mark;
}

void check_regexes(const YAML::Node& list, const std::string& where, Diagnostics& diagnostics) {
  if (!list || !list.IsSequence()) return;
  for (const auto& entry : list) {
    try {
      std::regex(entry.Scalar());
    } catch (const std::regex_error& e) {
      diagnostics.error(entry.Mark(), where + ": bad regular expression '" + entry.Scalar() + "': " + e.what());
    }
  }
}

void validate_workflow(Workflow& workflow, const std::vector<StringUse>& strings, Diagnostics& diagnostics) {
  check_model(workflow.root["model"], diagnostics);
  if (YAML::Node defaults = workflow.root["defaults"]) tolerance_overrides(defaults["tolerances"], &diagnostics);

  std::set<std::string> ids;
  for (size_t i = 0; i < workflow.steps.size(); ++i) {
    StepSpec& step = workflow.steps[i];
    YAML::Node id = step.node["id"];
    if (!valid_id(step.id))
      diagnostics.error(id.Mark(), "step id '" + step.id + "' may only hold letters, digits, '_' and '-'");
    else if (!ids.insert(step.id).second)
      diagnostics.error(id.Mark(), "duplicate step id '" + step.id + "'");
    if (const StepKindDeclaration* kind = find_declared_step_kind(step.kind)) {
      const CheckContext context{workflow, static_cast<int>(i)};
      kind->check(step, context, diagnostics);
      step.options = kind->parse(step, context, diagnostics);
    }
  }
  if (!diagnostics.empty()) return;  // references need unique, valid ids

  ReferenceChecker references(workflow, diagnostics);
  for (const StringUse& use : strings) references.check(use);
  references.report_order_problems();
}

}  // namespace diagnose
