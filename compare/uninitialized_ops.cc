#include "compare/uninitialized_ops.h"

#include <algorithm>

namespace diagnose::compare {

const std::vector<std::string>& uninitialized_op_packets() {
  static const std::vector<std::string> packets = {
      "aten.empty",          "aten.empty_like",     "aten.empty_strided",
      "aten.empty_permuted", "aten.new_empty",      "aten.new_empty_strided",
      "prims.empty",         "prims.empty_strided", "prims.empty_permuted"};
  return packets;
}

bool is_uninitialized_op(const std::string& op) {
  // The operator inside an op_key: after "{node}-" or "{module}/", before "#{n}".
  const size_t separator = op.find_last_of("-/");
  const size_t begin = separator == std::string::npos ? 0 : separator + 1;
  const std::string name = op.substr(begin, op.find('#', begin) - begin);
  const size_t overload = name.rfind('.');
  if (overload == std::string::npos) return false;
  const std::string packet = name.substr(0, overload);
  const std::vector<std::string>& packets = uninitialized_op_packets();
  return std::find(packets.begin(), packets.end(), packet) != packets.end();
}

std::set<std::string> uninitialized_inputs(const Manifest& dump) {
  // A tensor's contents as the dump identifies them: its hash, else the file equal contents share.
  const auto contents = [](const ManifestRecord& r) {
    const std::optional<RecordedStats> stats = recorded_stats(r);
    const std::string hash = stats ? stats->hash : "";
    if (hash.empty() && r.file.empty()) return std::string();
    return std::to_string(r.graph) + "/" + std::to_string(r.step) + "/" + r.dtype + "/" + shape_to_string(r.shape) +
           "/" + (hash.empty() ? "file:" + r.file : hash);
  };
  std::set<std::string> uninitialized, inputs;
  for (const ManifestRecord& r : dump.records) {
    const std::string tensor = contents(r);
    if (tensor.empty() || r.kind != "op") continue;
    if (r.io == "output" && (is_uninitialized_op(r.op) || is_uninitialized_op(r.op_key)))
      uninitialized.insert(tensor);
    else if (r.io == "input" && uninitialized.count(tensor))
      inputs.insert(r.match_key());
  }
  return inputs;
}

}  // namespace diagnose::compare
