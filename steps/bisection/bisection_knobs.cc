#include "steps/bisection/bisection_knobs.h"

#include <algorithm>
#include <set>

#include <boost/filesystem.hpp>

#include <nlohmann/json.hpp>

#include "fusion_files/fusion_result.h"
#include "orchestrator/bisect/trial_oracle.h"
#include "runspec/plugin_status.h"

namespace diagnose {

namespace fs = boost::filesystem;

std::optional<std::vector<std::string>> read_fired_report(const std::string& path) {
  if (!fs::exists(path)) return std::nullopt;
  std::string text = torchair::read_fusion_file(path);
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (is_plugin_status(doc)) return fired_rules_in_status(doc, path);
  return torchair::fired_rules(torchair::parse_fusion_result(text, path));
}

torchair::FusionSwitch switch_for(const bisect::Config& off,
                                  const std::map<std::string, torchair::FusionSection>& sections) {
  bisect::Config known, unknown;
  for (const std::string& rule : off) (sections.count(rule) ? known : unknown).push_back(rule);
  torchair::FusionSwitch result = torchair::switch_turning_off(known, sections);
  // GE ignores a name its section does not have: off in both, it is off wherever it lives.
  for (const std::string& rule : unknown) result.graph.rules[rule] = result.ub.rules[rule] = false;
  return result;
}

std::map<std::string, torchair::FusionSection> report_sections(const std::string& path) {
  if (!fs::exists(path)) return {};
  std::string text = torchair::read_fusion_file(path);
  if (is_plugin_status(nlohmann::json::parse(text, nullptr, false))) return {};
  return torchair::rule_sections(torchair::parse_fusion_result(text, path));
}

FusionSwitchFileKnob::FusionSwitchFileKnob(std::string fired_report,
                                           std::map<std::string, torchair::FusionSection> sections)
    : fired_report_(std::move(fired_report)), sections_(std::move(sections)) {}

std::optional<std::vector<std::string>> FusionSwitchFileKnob::fired_rules(const std::string& path) const {
  return read_fired_report(path);
}

void FusionSwitchFileKnob::prepare(bisect::Trial& trial) const {
  trial.switch_file = trial.dir + "/fusion_switch.json";
  torchair::write_fusion_switch_file(trial.switch_file, switch_for(trial.off, sections_));
}

void FusionSwitchFileKnob::learn(const std::string& report_path, bool listing) {
  std::map<std::string, torchair::FusionSection> sections = report_sections(report_path);
  if (listing) {
    sections_ = std::move(sections);
    return;
  }
  for (const auto& [rule, section] : sections) reported_[rule] = section;
}

void FusionSwitchFileKnob::resume(const nlohmann::json& state, const std::vector<std::string>& candidates,
                                  const std::string& all_on_report) {
  try {
    for (const auto& [rule, section] : report_sections(all_on_report)) sections_[rule] = section;
  } catch (const std::exception&) {
    // no readable report there: the log's sections stand
  }
  if (!state.is_object()) return;
  std::map<std::string, torchair::FusionSection> logged;
  if (!state.contains("graph_fusion_rules"))  // older logs: every rule not UB was a graph rule
    for (const std::string& rule : candidates) logged[rule] = torchair::FusionSection::Graph;
  for (const std::string& rule : state.value("graph_fusion_rules", std::vector<std::string>{}))
    logged[rule] = torchair::FusionSection::Graph;
  for (const std::string& rule : state.value("ub_fusion_rules", std::vector<std::string>{}))
    logged[rule] = torchair::FusionSection::UB;
  for (const auto& [rule, section] : logged) sections_[rule] = section;
}

nlohmann::json FusionSwitchFileKnob::state() const {
  nlohmann::json graph = nlohmann::json::array(), ub = nlohmann::json::array();
  for (const auto& [rule, section] : sections_) (section == torchair::FusionSection::UB ? ub : graph).push_back(rule);
  return {{"graph_fusion_rules", graph}, {"ub_fusion_rules", ub}};
}

std::string FusionSwitchFileKnob::write_workaround(const bisect::Config& culprits, const std::string& dir) const {
  std::map<std::string, torchair::FusionSection> sections = reported_;
  for (const auto& [rule, section] : sections_) sections[rule] = section;
  std::string path = dir + "/fusion_switch.json";
  torchair::write_fusion_switch_file(path, switch_for(culprits, sections));
  return path;
}

std::optional<std::string> user_pass_of(const std::vector<std::string>& set,
                                        const std::map<std::string, InductorRule>& rules) {
  for (const std::string& name : set) {
    auto rule = rules.find(name);
    if (rule == rules.end() || rule->second.user_pass.empty()) continue;
    if (set.size() == 1 || (set.size() == 2 && std::count(set.begin(), set.end(), rule->second.gate))) return name;
  }
  return std::nullopt;
}

std::map<std::string, std::string> user_pass_gates(const std::vector<std::string>& candidates,
                                                   const std::map<std::string, InductorRule>& rules) {
  std::map<std::string, std::string> gates;
  for (const std::string& name : candidates) {
    auto rule = rules.find(name);
    if (rule == rules.end() || rule->second.user_pass.empty()) continue;
    if (std::count(candidates.begin(), candidates.end(), rule->second.gate)) gates[name] = rule->second.gate;
  }
  return gates;
}

bisect::Config without_user_pass_gates(const bisect::Config& culprits,
                                       const std::map<std::string, InductorRule>& rules) {
  std::set<std::string> gates;
  for (const std::string& name : culprits) {
    auto rule = rules.find(name);
    if (rule != rules.end() && !rule->second.user_pass.empty()) gates.insert(rule->second.gate);
  }
  bisect::Config off;
  for (const std::string& name : culprits)
    if (!gates.count(name)) off.push_back(name);
  return off;
}

}  // namespace diagnose
