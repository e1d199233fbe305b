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

}  // namespace diagnose::compare
