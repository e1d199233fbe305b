// TorchAir / GE fusion switch file (fusion_config.fusion_switch_file, GE's ge.fusionSwitchFile):
//   {"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"},
//               "UBFusion":    {"TbeEltwiseFusionPass": "off"}}}
// Values are "on"/"off"; a per-rule entry beats the section's "ALL"; rules not named keep
// GE's default (on).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace diagnose::torchair {

enum class FusionSection { Graph, UB };
std::string fusion_section_key(FusionSection section);  // "GraphFusion" / "UBFusion"

// A malformed fusion switch file or fusion_result.json; the message starts with the file name.
class FusionFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SectionSwitches {
  std::optional<bool> all;            // "ALL"
  std::map<std::string, bool> rules;  // rule -> on
};

struct FusionSwitch {
  SectionSwitches graph, ub;

  SectionSwitches& section(FusionSection s) { return s == FusionSection::Graph ? graph : ub; }
  const SectionSwitches& section(FusionSection s) const { return s == FusionSection::Graph ? graph : ub; }
  // Whether GE runs the rule under this file: its own entry, else "ALL", else on.
  bool is_on(FusionSection s, const std::string& rule) const;
};

// The file that turns exactly `rules_off` off, each in the section `sections` gives it.
// Throws std::invalid_argument naming a rule whose section is unknown.
FusionSwitch switch_turning_off(const std::vector<std::string>& rules_off,
                                const std::map<std::string, FusionSection>& sections);

std::string fusion_switch_json(const FusionSwitch& fusion_switch);  // the file's text
void write_fusion_switch_file(const std::filesystem::path& path, const FusionSwitch& fusion_switch);

// The whole file; FusionFileError naming it when it cannot be read.
std::string read_fusion_file(const std::filesystem::path& path);

// `source` names the text in error messages.
FusionSwitch parse_fusion_switch(const std::string& text, const std::string& source);
FusionSwitch read_fusion_switch_file(const std::filesystem::path& path);

}  // namespace diagnose::torchair
