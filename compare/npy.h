// numpy .npy files: header parsing (v1, v2, v3) into a TensorRef. Never unpickles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compare/tensor.h"

namespace diagnose::compare {

// Parses an npy header from the first bytes of a file. `file_size` is the whole
// file's size, used to check that the data fits. On failure the returned ref has
// `error` set (object/string arrays, corrupt header, truncated data...).
TensorRef parse_npy_header(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& path);

// Opens `path` and parses its header.
TensorRef read_npy(const std::string& path);

}  // namespace diagnose::compare
