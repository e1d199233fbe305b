// A side of a comparison as a step's key gives it (golden:, target:, referee:): the path of a
// dump made elsewhere, or overrides of a run of the model.
//
// The option structs of the step kinds hold YAML nodes by initialisation only: assigning a
// YAML::Node writes through to the node it refers to, and throws for a key the step lacks.
#pragma once

#include "steps/layer.h"

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace diagnose {

struct SideOption {
  std::optional<std::string> path;  // as written; StepContext::path expands it
  YAML::Node overrides;             // the key as written (a mapping), or undefined: the kind's defaults

  static SideOption parse(const YAML::Node& node) {
    if (node && node.IsScalar()) return {node.Scalar(), YAML::Node(YAML::NodeType::Undefined)};
    return {std::nullopt, node};
  }
};

}  // namespace diagnose
