#include "fusion_files/fusion_result.h"

#include <set>

#include <nlohmann/json.hpp>

namespace diagnose::torchair {
namespace {

using Json = nlohmann::ordered_json;

struct SectionKey {
  const char* key;
  FusionSection section;
};
const SectionKey kSections[] = {{"graph_fusion", FusionSection::Graph}, {"ub_fusion", FusionSection::UB}};

long long count_of(const Json& rule, const char* field, const std::string& where, const std::string& source) {
  if (!rule.contains(field)) return 0;
  const Json& value = rule[field];
  if (value.is_number_unsigned() || (value.is_number_integer() && value.get<long long>() >= 0))
    return value.get<long long>();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (!text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos)
      return std::stoll(text);
  }
  throw FusionFileError(source + ": " + where + "." + field + ": expected a count, got " + value.dump());
}

void parse_graph(const std::string& graph, const Json& entry, const std::string& where, const std::string& source,
                 std::vector<FusionRecord>& records) {
  if (!entry.is_object()) throw FusionFileError(source + ": " + where + " is not an object");
  for (const auto& [key, section] : kSections) {
    if (!entry.contains(key)) continue;
    const Json& rules = entry[key];
    std::string section_where = where + "." + key;
    if (!rules.is_object()) throw FusionFileError(source + ": " + section_where + " is not an object");
    for (const auto& [rule, counts] : rules.items()) {
      std::string rule_where = section_where + "." + rule;
      if (!counts.is_object()) throw FusionFileError(source + ": " + rule_where + " is not an object");
      records.push_back({graph, section, rule, count_of(counts, "match_times", rule_where, source),
                         count_of(counts, "effect_times", rule_where, source)});
    }
  }
}

}  // namespace

std::vector<FusionRecord> parse_fusion_result(const std::string& text, const std::string& source) {
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw FusionFileError(source + ": not valid JSON: " + e.what());
  }
  std::vector<FusionRecord> records;
  if (json.is_object()) {
    for (const auto& [graph, entry] : json.items()) parse_graph(graph, entry, graph, source, records);
  } else if (json.is_array()) {
    for (size_t i = 0; i < json.size(); ++i) {
      const Json& entry = json[i];
      std::string where = "[" + std::to_string(i) + "]";
      std::string graph = where;
      if (entry.is_object() && entry.contains("session_and_graph_id")) {
        const Json& id = entry["session_and_graph_id"];
        if (!id.is_string()) throw FusionFileError(source + ": " + where + ".session_and_graph_id is not a string");
        graph = id.get<std::string>();
      }
      parse_graph(graph, entry, where, source, records);
    }
  } else {
    throw FusionFileError(source + ": expected an object of graphs or a list of graphs, got " +
                          std::string(json.type_name()));
  }
  return records;
}

std::vector<FusionRecord> read_fusion_result_file(const std::filesystem::path& path) {
  return parse_fusion_result(read_fusion_file(path), path.string());
}

std::vector<std::string> fired_rules(const std::vector<FusionRecord>& records) {
  std::vector<std::string> rules;
  std::set<std::string> seen;
  for (const auto& record : records)
    if (record.effect_times > 0 && seen.insert(record.rule).second) rules.push_back(record.rule);
  return rules;
}

std::map<std::string, FusionSection> rule_sections(const std::vector<FusionRecord>& records) {
  std::map<std::string, FusionSection> sections;
  for (const auto& record : records) sections.emplace(record.rule, record.section);
  return sections;
}

}  // namespace diagnose::torchair
