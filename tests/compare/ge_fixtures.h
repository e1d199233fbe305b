// Builders for GE / FX dump fixtures, shared by the TorchAir tests. Files are
// written from the generated protobuf classes, independently of the readers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ge_dump.pb.h"
#include "tests/compare/test_files.h"

namespace diagnose::compare::testing {

namespace fs = std::filesystem;

using testing_support::TempDir;

inline void write_file(const std::string& path, const std::string& bytes) { testing_support::write_text(path, bytes); }

inline std::string floats_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// uint64 LE header length + header + payload.
inline std::string ge_dump_bytes(const toolkit::dump::DumpData& header, const std::string& payload) {
  const std::string h = header.SerializeAsString();
  std::string out(8, '\0');
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xFF);
  return out + h + payload;
}

constexpr int kGeFloat = 1, kGeFloat16 = 2, kGeInt32 = 7, kGeString = 13;
constexpr int kFormatND = 2, kFormatNZ = 29;

inline void set_shape(toolkit::dump::Shape* s, const std::vector<uint64_t>& dims) {
  for (uint64_t d : dims) s->add_dim(d);
}

inline toolkit::dump::OpInput* add_input(toolkit::dump::DumpData* d, int dtype, const std::vector<uint64_t>& shape,
                                         uint64_t size, int format = kFormatND) {
  auto* t = d->add_input();
  t->set_data_type(dtype);
  t->set_format(format);
  set_shape(t->mutable_shape(), shape);
  t->set_size(size);
  return t;
}

inline toolkit::dump::OpOutput* add_output(toolkit::dump::DumpData* d, int dtype, const std::vector<uint64_t>& shape,
                                           uint64_t size, int format = kFormatND) {
  auto* t = d->add_output();
  t->set_data_type(dtype);
  t->set_format(format);
  set_shape(t->mutable_shape(), shape);
  t->set_size(size);
  return t;
}

// A float32 GE dump with the given inputs and outputs (each a flat vector, shape [n]).
inline std::string float_ge_dump(const std::vector<std::vector<float>>& inputs,
                                 const std::vector<std::vector<float>>& outputs, const std::string& op_name = "") {
  toolkit::dump::DumpData d;
  d.set_op_name(op_name);
  std::string payload;
  for (const auto& v : inputs) {
    add_input(&d, kGeFloat, {v.size()}, v.size() * 4);
    payload += floats_bytes(v);
  }
  for (const auto& v : outputs) {
    add_output(&d, kGeFloat, {v.size()}, v.size() * 4);
    payload += floats_bytes(v);
  }
  return ge_dump_bytes(d, payload);
}

// numpy .npy v1, little-endian float32, C order.
inline std::string npy_bytes(const std::vector<int64_t>& shape, const std::vector<float>& data) {
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    shape_text += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  shape_text += ")";
  return diagnose::testing::npy_bytes("<f4", shape_text, data.data(), data.size() * sizeof(float));
}

}  // namespace diagnose::compare::testing
