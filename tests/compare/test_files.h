// Helpers for tests that need real files: temporary directories and .npy writers.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/files.h"

namespace diagnose::testing {

using testing_support::TempDir;

inline void write_bytes(const std::string& path, const std::string& bytes) { testing_support::write_text(path, bytes); }

// A version-1 .npy file with the given descr ("<f4"), shape text ("(2, 3)") and raw data.
inline std::string npy_bytes(const std::string& descr, const std::string& shape, const void* data, size_t size,
                             bool fortran = false) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(data), size);
  return out;
}

inline void write_npy_f32(const std::string& path, const std::vector<float>& values, const std::string& shape = "") {
  write_bytes(path, npy_bytes("<f4", shape.empty() ? "(" + std::to_string(values.size()) + ",)" : shape, values.data(),
                              values.size() * 4));
}

// The manifest.jsonl of a diagnose dump in `dir` (docs/dump-format.md): the header (saying the
// dump holds float64 truths where `truth`), the records, one a line, and the end line counting them.
inline void write_manifest_records(const std::string& dir, const std::vector<std::string>& records,
                                   bool truth = false) {
  std::string lines = std::string(R"({"type": "header", "format": "diagnose-dump", "version": 1)") +
                      (truth ? R"(, "truth": true})" : "}") + "\n";
  for (const std::string& record : records) lines += record + "\n";
  write_bytes(dir + "/manifest.jsonl",
              lines + R"({"type": "end", "records": )" + std::to_string(records.size()) + "}\n");
}

// A diagnose dump in `dir` (docs/dump-format.md) of (2, 4) float32 output tensors, one a record:
// `fields` the record's identity as manifest members ("kind": "final", "op_key": ..., "step": 0).
struct F32Record {
  std::string fields;
  std::vector<float> values;
};
inline void write_f32_dump(const std::string& dir, const std::vector<F32Record>& records) {
  std::vector<std::string> lines;
  for (const F32Record& r : records) {
    const std::string seq = std::to_string(lines.size()), file = "tensors/" + seq + ".npy";
    write_npy_f32(dir + "/" + file, r.values, "(2, 4)");
    lines.push_back(R"({"type": "tensor", "seq": )" + seq + ", " + r.fields +
                    R"(, "io": "output", "index": 0, "dtype": "torch.float32", "shape": [2, 4], "file": ")" + file +
                    "\"}");
  }
  write_manifest_records(dir, lines);
}

// The header GE's dump recorder writes for its default statistics (compare/ge_stats.h).
inline const std::string kStatsHeader =
    "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,"
    "Negative Inf Count,Positive Inf Count\n";

}  // namespace diagnose::testing
