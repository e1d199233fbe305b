#include "runspec/plugin_status.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runspec/json_member.h"

namespace diagnose {

namespace {

std::string string_or(const nlohmann::json& value, const std::string& otherwise = "") {
  return value.is_string() ? value.get<std::string>() : otherwise;
}

std::optional<bool> boolean(const nlohmann::json& value) {
  return value.is_boolean() ? std::optional<bool>(value.get<bool>()) : std::nullopt;
}

std::optional<int64_t> count(const nlohmann::json& value) {
  return value.is_number() ? std::optional<int64_t>(value.get<int64_t>()) : std::nullopt;
}

std::string text_of(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

std::map<std::string, ProbedFeature> features_of(const nlohmann::json& features) {
  std::map<std::string, ProbedFeature> out;
  if (!features.is_object()) return out;
  for (const auto& [name, feature] : features.items())
    out[name] = {json_member(feature, "available") == false, string_or(json_member(feature, "reason")),
                 string_or(json_member(feature, "without"))};
  return out;
}

RunConfiguration configuration_of(const nlohmann::json& configuration) {
  RunConfiguration out{boolean(json_member(configuration, "cuda_matmul_allow_tf32")),
                       boolean(json_member(configuration, "cudnn_allow_tf32")),
                       boolean(json_member(configuration, "deterministic_algorithms")),
                       std::nullopt,
                       {}};
  const nlohmann::json& precision = json_member(configuration, "float32_matmul_precision");
  if (precision.is_string()) out.float32_matmul_precision = precision.get<std::string>();
  const nlohmann::json& dropout = json_member(configuration, "active_dropout");
  if (dropout.is_array())
    for (const nlohmann::json& module : dropout)
      out.active_dropout.push_back({string_or(json_member(module, "module"), "?"), json_member(module, "p")});
  return out;
}

// Dynamo's reasons as text: graph_break_reasons (or an older plugin's break_reasons list), each a
// string or an object with its `reason`.
std::vector<std::string> reasons_of(const nlohmann::json& graphs, std::initializer_list<const char*> keys) {
  std::vector<std::string> out;
  for (const char* key : keys) {
    const nlohmann::json& reasons = json_member(graphs, key);
    if (!reasons.is_array()) continue;
    for (const nlohmann::json& reason : reasons)
      out.push_back(reason.is_object() && reason.contains("reason") ? text_of(reason["reason"]) : text_of(reason));
    break;
  }
  return out;
}

CompileCounts graphs_of(const nlohmann::json& graphs) {
  return {count(json_member(graphs, "graph_breaks")),
          count(json_member(graphs, "recompiles")),
          reasons_of(graphs, {"graph_break_reasons", "break_reasons"}),
          reasons_of(graphs, {"recompile_reasons"}),
          count(json_member(graphs, "value_bytes")),
          count(json_member(graphs, "value_elements"))};
}

std::vector<IsolatedNode> isolated_nodes_of(const nlohmann::json& isolation) {
  std::vector<IsolatedNode> out;
  const nlohmann::json& nodes = json_member(isolation, "nodes");
  if (!nodes.is_array()) return out;
  for (const nlohmann::json& node : nodes)
    if (!string_or(json_member(node, "id")).empty())
      out.push_back({string_or(json_member(node, "id")), string_or(json_member(node, "op")),
                     string_or(json_member(node, "module")), string_or(json_member(node, "source"))});
  return out;
}

DumpOutcome dump_of(const nlohmann::json& dump) {
  if (!dump.is_object()) return {};
  const nlohmann::json& budget = json_member(json_member(dump, "not_kept"), "budget");
  return {true, count(json_member(dump, "written_bytes")).value_or(0), json_member(dump, "budget_reached") == true,
          count(budget).value_or(0)};
}

std::map<std::string, InductorRule> inductor_rules_of(const nlohmann::json& inductor_rules) {
  std::map<std::string, InductorRule> out;
  const nlohmann::json& rules = json_member(inductor_rules, "rules");
  if (!rules.is_object()) return out;
  const nlohmann::json& user_passes = json_member(inductor_rules, "user_passes");
  for (const auto& [name, rule] : rules.items())
    out[name] = {string_or(json_member(rule, "config")), json_member(rule, "off_value"),
                 string_or(json_member(rule, "gate")), string_or(json_member(user_passes, name.c_str()))};
  return out;
}

}  // namespace

nlohmann::json PluginStatus::dump_max_bytes() const { return json_member(json_member(spec, "dump"), "max_bytes"); }

PluginStatus parse_plugin_status(const nlohmann::json& status) {
  PluginStatus out;
  if (!status.is_object()) return out;
  out.written = true;
  out.spec = json_member(status, "spec");
  out.spec_fields = run_spec_fields(out.spec);
  const nlohmann::json& argv = json_member(status, "argv");
  if (argv.is_array())
    for (const nlohmann::json& arg : argv) out.argv.push_back(string_or(arg));
  if (status.contains("torch_version")) out.torch_version = string_or(status["torch_version"]);
  out.features = features_of(json_member(status, "features"));
  out.configuration = configuration_of(json_member(status, "configuration"));
  out.graphs = graphs_of(json_member(status, "graphs"));
  const nlohmann::json& ran = json_member(status, "ran");
  out.ran = {json_member(ran, "mode"), json_member(ran, "backend"), json_member(ran, "device"),
             json_member(ran, "dtype")};
  out.active_switches = json_member(json_member(status, "switches"), "active");
  out.torchair_options = json_member(out.active_switches, "torchair");
  out.isolated_nodes = isolated_nodes_of(json_member(status, "isolation"));
  out.dump = dump_of(json_member(status, "dump"));
  out.inductor_rules = inductor_rules_of(json_member(status, "inductor_rules"));
  const nlohmann::json& compile_calls = json_member(status, "compile_calls");
  if (compile_calls.is_array()) out.compile_calls = compile_calls.size();
  return out;
}

bool is_plugin_status(const nlohmann::json& doc) {
  return doc.is_object() && json_member(doc, "format") == "diagnose-run-status";
}

std::optional<std::vector<std::string>> fired_rules_in_status(const nlohmann::json& status, const std::string& path) {
  // An Inductor run of a node search has inductor_rules too: the isolation is what it reports.
  const bool isolation = status.contains("isolation");
  const char* section = isolation ? "isolation" : "inductor_rules";
  const char* key = isolation ? "compiled" : "fired";
  const nlohmann::json& fired = json_member(json_member(status, section), key);
  if (fired.is_null()) return std::nullopt;
  const std::string where = path + ": " + section + "." + key;
  if (!fired.is_array()) throw std::runtime_error(where + " is not a list");
  std::vector<std::string> rules;
  for (const nlohmann::json& rule : fired) {
    if (!rule.is_string()) throw std::runtime_error(where + " holds a non-string");
    rules.push_back(rule.get<std::string>());
  }
  return rules;
}

std::string plugin_status_path(const std::string& run_dir, int rank) {
  return run_dir + (rank <= 0 ? std::string("/status.json") : "/status_rank" + std::to_string(rank) + ".json");
}

PluginStatus read_plugin_status(const std::string& run_dir, int rank) {
  std::ifstream file(plugin_status_path(run_dir, rank), std::ios::binary);
  if (!file) return {};
  std::stringstream text;
  text << file.rdbuf();
  return parse_plugin_status(nlohmann::json::parse(text.str(), nullptr, false));
}

}  // namespace diagnose
