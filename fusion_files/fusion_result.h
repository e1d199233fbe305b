// GE's fusion_result.json (written at graph compile when ge_config.export_compile_stat is on):
// which fusion rules matched and took effect, per graph. Two layouts exist:
//   {"session_and_graph_id_0_0": {"graph_fusion": {"Rule": {"effect_times": "1", "match_times": "1"}},
//                                 "ub_fusion": {...}}}
//   [{"session_and_graph_id": "0_0", "graph_fusion": {...}, "ub_fusion": {...}}]
// Counts are strings. A rule switched off by the switch file is absent.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fusion_files/fusion_switch.h"

namespace diagnose::torchair {

struct FusionRecord {
  std::string graph;  // "session_and_graph_id_0_0" (dict form) or "0_0" (list form)
  FusionSection section = FusionSection::Graph;
  std::string rule;
  long long match_times = 0;
  long long effect_times = 0;
};

// Throws FusionFileError (message starting with `source`) on malformed input.
std::vector<FusionRecord> parse_fusion_result(const std::string& text, const std::string& source);
std::vector<FusionRecord> read_fusion_result_file(const std::filesystem::path& path);

// Rules that changed a graph (effect_times > 0), each once, in the order they first appear:
// the bisection candidates of a fusion-on run, or the rules that fired in a trial.
std::vector<std::string> fired_rules(const std::vector<FusionRecord>& records);

// The section each rule was reported in (for writing a switch file that turns it off).
std::map<std::string, FusionSection> rule_sections(const std::vector<FusionRecord>& records);

}  // namespace diagnose::torchair
