// GE dump parsing from arbitrary bytes: header form, whole-file form, shapes and
// layout planning; then the layout conversion of small tensors; the same bytes as a statistics
// file (dump_data="stats").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compare/ge_dump.h"
#include "compare/ge_stats.h"
#include "compare/layout.h"

using namespace diagnose::compare;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const GeDump dump = parse_ge_dump(data, size, size, "fuzz");
  for (const auto* tensors : {&dump.inputs, &dump.outputs}) {
    for (const TensorRef& t : *tensors) {
      if (!t.ok() || !needs_layout_conversion(t) || element_count(t.stored_shape) > (1u << 16)) continue;
      std::vector<float> in(element_count(t.stored_shape)), out;
      std::string error;
      convert_to_logical(t.format, t.stored_shape, t.shape, in, &out, &error);
    }
  }
  parse_ge_stats(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  if (size < 512) parse_ge_dump_name(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
