// npy header parsing from arbitrary bytes.
#include <cstddef>
#include <cstdint>

#include "compare/npy.h"

using namespace diagnose::compare;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse_npy_header(data, size, size, "fuzz.npy");
  return 0;
}
