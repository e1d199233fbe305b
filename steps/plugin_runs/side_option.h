// A side of a comparison as a step's key gives it (golden:, target:, referee:): the path of a
// dump made elsewhere, or overrides of a run of the model.
//
// The option structs of the step kinds hold the nodes of their keys as option_node gives them:
// assigning a YAML::Node writes through to the node it refers to, and throws for a key the step
// lacks; a node from option_node may be assigned to a member not assigned before.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace diagnose {

// The node of `key`, or an undefined one where `node` lacks it.
inline YAML::Node option_node(const YAML::Node& node, const char* key) {
  return node[key] ? node[key] : YAML::Node(YAML::NodeType::Undefined);
}

struct SideOption {
  std::optional<std::string> path;  // as written; StepContext::path expands it
  YAML::Node overrides;             // the key as written (a mapping), or undefined: the kind's defaults

  static SideOption parse(const YAML::Node& node) {
    if (node && node.IsScalar()) return {node.Scalar(), YAML::Node(YAML::NodeType::Undefined)};
    return {std::nullopt, node ? node : YAML::Node(YAML::NodeType::Undefined)};
  }
};

}  // namespace diagnose
