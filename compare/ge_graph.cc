#include "compare/ge_graph.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>

#include "compare/ge_dump.h"
#include "ge_ir.pb.h"

namespace diagnose::compare {
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (text.empty()) text = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  std::string text;
};

GeGraphInput parse_input(const std::string& text) {
  GeGraphInput in;
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    in.op = text;
    return in;
  }
  in.op = text.substr(0, colon);
  try {
    in.index = std::stoi(text.substr(colon + 1));
  } catch (...) {
    in.op = text;
    in.index = 0;
  }
  return in;
}

std::string attr_string(const google::protobuf::Map<std::string, ge::proto::AttrDef>& attrs, const std::string& key) {
  const auto it = attrs.find(key);
  return it != attrs.end() && it->second.value_case() == ge::proto::AttrDef::kS ? it->second.s() : "";
}

}  // namespace

std::optional<std::string> GeGraphOp::fx_prefix() const {
  for (const auto& link : output_links)
    if (link) return link->prefix;
  return std::nullopt;
}

const GeGraphOp* GeGraph::find(const std::string& name) const {
  auto it = by_name.find(name);
  if (it != by_name.end()) return &ops[it->second];
  it = by_file_name.find(sanitize_ge_name(name));
  return it != by_file_name.end() ? &ops[it->second] : nullptr;
}

std::optional<FxLink> parse_fx_tensor_name(const std::string& text) {
  const size_t pos = text.rfind(".OUTPUT.");
  if (pos == std::string::npos || pos == 0) return std::nullopt;
  const std::string index = text.substr(pos + 8);
  if (index.empty() || index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return FxLink{text.substr(0, pos), std::stoi(index)};
}

std::optional<GeGraph> parse_ge_graph(const std::string& text, const std::string& path, std::string* error) {
  ge::proto::GraphDef def;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);
  parser.AllowUnknownExtension(true);
  parser.SetRecursionLimit(64);
  if (!parser.ParseFromString(text, &def)) {
    if (error) *error = path + ":" + (errors.text.empty() ? "1:1: malformed graph text" : errors.text);
    return std::nullopt;
  }
  GeGraph g;
  g.path = path;
  g.name = def.name();
  g.ops.reserve(def.op_size());
  for (const auto& op : def.op()) {
    GeGraphOp o;
    o.name = op.name();
    o.type = op.type();
    for (const auto& in : op.input())
      if (!in.empty()) o.inputs.push_back(parse_input(in));
    for (const auto& desc : op.output_desc()) {
      o.output_links.push_back(parse_fx_tensor_name(attr_string(desc.attr(), "_fx_tensor_name")));
      o.output_meta.push_back(attr_string(desc.attr(), "_meta"));
    }
    for (const auto& in : o.inputs)
      if (!in.control()) g.first_consumer.emplace(in.op, g.ops.size());
    g.by_name.emplace(o.name, g.ops.size());
    g.by_file_name.emplace(sanitize_ge_name(o.name), g.ops.size());
    g.ops.push_back(std::move(o));
  }
  return g;
}

std::optional<GeGraph> read_ge_graph(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    if (error) *error = path + ": cannot read graph file";
    return std::nullopt;
  }
  return parse_ge_graph(text.str(), path, error);
}

std::optional<std::vector<std::string>> split_fused_name(const std::string& fused,
                                                         const std::function<bool(const std::string&)>& known) {
  // dead[i]: the suffix starting at i cannot be split.
  std::vector<bool> dead(fused.size() + 1, false);
  std::vector<std::string> parts;
  std::function<bool(size_t)> split_from = [&](size_t begin) {
    if (begin == fused.size()) return true;
    if (dead[begin]) return false;
    for (size_t len = fused.size() - begin; len > 0; --len) {
      std::string candidate = fused.substr(begin, len);
      if (!known(candidate)) continue;
      parts.push_back(std::move(candidate));
      if (split_from(begin + len)) return true;
      parts.pop_back();
    }
    dead[begin] = true;
    return false;
  };
  if (fused.empty() || !split_from(0)) return std::nullopt;
  return parts;
}

}  // namespace diagnose::compare
