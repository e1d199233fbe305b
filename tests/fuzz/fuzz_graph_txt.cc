// Graph txt parsing (protobuf text format) from arbitrary text, then the index
// lookups and fused-name splitting the matcher does on it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compare/ge_graph.h"

using namespace diagnose::compare;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto graph = parse_ge_graph(text, "fuzz.txt", &error);
  if (!graph) return 0;
  std::string names;
  for (const GeGraphOp& op : graph->ops) {
    op.fx_prefix();
    graph->find(op.name);
    if (names.size() < 256) names += op.name;
  }
  split_fused_name(names, [&](const std::string& n) { return graph->find(n) != nullptr; });
  return 0;
}
