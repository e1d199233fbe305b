#include "fusion_files/fusion_switch.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace diagnose::torchair {
namespace {

using Json = nlohmann::ordered_json;

const char* const kAll = "ALL";

bool switch_value(const Json& value, const std::string& where, const std::string& source) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text == "on") return true;
    if (text == "off") return false;
  }
  throw FusionFileError(source + ": " + where + ": expected \"on\" or \"off\", got " + value.dump());
}

Json section_json(const SectionSwitches& section) {
  Json json = Json::object();
  if (section.all) json[kAll] = *section.all ? "on" : "off";
  for (const auto& [rule, on] : section.rules) json[rule] = on ? "on" : "off";
  return json;
}

}  // namespace

std::string read_fusion_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FusionFileError(path.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string fusion_section_key(FusionSection section) {
  return section == FusionSection::Graph ? "GraphFusion" : "UBFusion";
}

bool FusionSwitch::is_on(FusionSection s, const std::string& rule) const {
  const SectionSwitches& switches = section(s);
  auto entry = switches.rules.find(rule);
  if (entry != switches.rules.end()) return entry->second;
  return switches.all.value_or(true);
}

FusionSwitch switch_turning_off(const std::vector<std::string>& rules_off,
                                const std::map<std::string, FusionSection>& sections) {
  FusionSwitch result;
  for (const auto& rule : rules_off) {
    auto known = sections.find(rule);
    if (known == sections.end())
      throw std::invalid_argument("fusion rule '" + rule + "': not known to be a graph or a UB fusion rule");
    result.section(known->second).rules[rule] = false;
  }
  return result;
}

std::string fusion_switch_json(const FusionSwitch& fusion_switch) {
  Json switches = Json::object();
  for (FusionSection s : {FusionSection::Graph, FusionSection::UB}) {
    const SectionSwitches& section = fusion_switch.section(s);
    if (section.all || !section.rules.empty()) switches[fusion_section_key(s)] = section_json(section);
  }
  return Json{{"Switch", switches}}.dump(2) + "\n";
}

void write_fusion_switch_file(const std::filesystem::path& path, const FusionSwitch& fusion_switch) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << fusion_switch_json(fusion_switch);
  if (!out.flush()) throw FusionFileError(path.string() + ": cannot be written");
}

FusionSwitch parse_fusion_switch(const std::string& text, const std::string& source) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw FusionFileError(source + ": not valid JSON: " + e.what());
  }
  if (!json.is_object() || !json.contains("Switch") || !json["Switch"].is_object())
    throw FusionFileError(source + ": expected an object {\"Switch\": {\"GraphFusion\": {...}, \"UBFusion\": {...}}}");
  FusionSwitch result;
  for (const auto& [key, entries] : json["Switch"].items()) {
    FusionSection s;
    if (key == fusion_section_key(FusionSection::Graph))
      s = FusionSection::Graph;
    else if (key == fusion_section_key(FusionSection::UB))
      s = FusionSection::UB;
    else
      throw FusionFileError(source + ": unknown section Switch." + key + " (expected GraphFusion or UBFusion)");
    if (!entries.is_object()) throw FusionFileError(source + ": Switch." + key + " is not an object");
    SectionSwitches& section = result.section(s);
    for (const auto& [rule, value] : entries.items()) {
      bool on = switch_value(value, "Switch." + key + "." + rule, source);
      if (rule == kAll)
        section.all = on;
      else
        section.rules[rule] = on;
    }
  }
  return result;
}

FusionSwitch read_fusion_switch_file(const std::filesystem::path& path) {
  return parse_fusion_switch(read_fusion_file(path), path.string());
}

}  // namespace diagnose::torchair
