// The TorchAir graph txt (dynamo_original_graph_*.txt, protobuf text of ge.proto.GraphDef):
// which GE op computes which FX node's output.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace diagnose::compare {

struct GeGraphInput {
  std::string op;  // producer op name
  int index = 0;   // producer output; -1 for a control edge
  bool control() const { return index < 0; }
};

// FX tensor an output is linked to: "{prefix}.OUTPUT.{output}" where prefix is the
// FX npy file prefix "{node}-{target}".
struct FxLink {
  std::string prefix;
  int output = 0;
};

struct GeGraphOp {
  std::string name;
  std::string type;
  std::vector<GeGraphInput> inputs;
  // Per output desc: the `_fx_tensor_name` link (nullopt when the output has none)
  // and the `_meta` text ("" when absent).
  std::vector<std::optional<FxLink>> output_links;
  std::vector<std::string> output_meta;

  // The FX node the op stands for: the first linked output's prefix.
  std::optional<std::string> fx_prefix() const;
};

struct GeGraph {
  std::string path;
  std::string name;
  std::vector<GeGraphOp> ops;  // file order
  std::unordered_map<std::string, size_t> by_name;
  std::unordered_map<std::string, size_t> by_file_name;    // GE dump file-name form of the name
  std::unordered_map<std::string, size_t> first_consumer;  // op name -> the first op reading its data

  // Exact name first, then the file-name form ('.', '/', '\\', ' ' replaced by '_').
  const GeGraphOp* find(const std::string& name) const;
};

// "add_1-aten.add.Tensor.OUTPUT.0" -> {"add_1-aten.add.Tensor", 0}.
std::optional<FxLink> parse_fx_tensor_name(const std::string& text);

// Parses graph text; on malformed text returns nullopt with "path:line:col: message".
std::optional<GeGraph> parse_ge_graph(const std::string& text, const std::string& path, std::string* error);
std::optional<GeGraph> read_ge_graph(const std::string& path, std::string* error);

// Splits a fused op name (AutomaticBufferFusionOp names concatenate the names of the
// ops they replace, "Add_2Cast_9ConcatV2") into names `known` accepts, preferring the
// longest name at each step and backtracking when the rest cannot be split.
std::optional<std::vector<std::string>> split_fused_name(const std::string& fused,
                                                         const std::function<bool(const std::string&)>& known);

}  // namespace diagnose::compare
