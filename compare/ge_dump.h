// GE dump files: the name GE gives each file and the binary layout
// (uint64 LE header length, DumpData protobuf header, then the raw tensor bytes).
// Tensors are referenced in place, never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/row.h"
#include "compare/tensor.h"

namespace diagnose::compare {

// Parsed file name, either
//   {op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}
// or the FFTS+ form
//   {op_type}.{op_name}.[{stream_id}.]{task_id}.{timestamp}.{task_type}.{context_id}.{thread_id}.{device_id}
// GE replaces '.', '/', '\\' and ' ' in op_type and op_name by '_'. Either form may end in
// ".csv": GE's statistics of the op instead of its tensors (dump_data="stats", ge_stats.h).
struct GeDumpName {
  std::string op_type;
  std::string op_name;
  int64_t task_id = -1;
  int64_t stream_id = -1;  // -1 when the FFTS+ name has none
  int64_t timestamp = 0;   // 16 digits, microseconds
  bool ffts = false;
  std::string task_type;  // FFTS+ only
  int64_t context_id = -1, thread_id = -1, device_id = -1;
  bool stats = false;  // the ".csv" statistics file
};

// nullopt (with *why) for names that are not GE dump names, including files ending
// in .txt, .npy or .bin.
std::optional<GeDumpName> parse_ge_dump_name(const std::string& file_name, std::string* why = nullptr);

// GE's file-name sanitising of an op name ('.', '/', '\\', ' ' -> '_').
std::string sanitize_ge_name(const std::string& name);

// The pre-fusion op an output of a fused op belongs to (DumpData OriginalOp).
struct GeOriginalOp {
  std::string name;
  int output_index = 0;
};

struct GeDump {
  std::string path;
  uint64_t file_size = 0;
  std::string op_name;  // DumpData.op_name; empty when the header has none
  std::vector<TensorRef> inputs, outputs, buffers, workspaces;
  // Per output: the pre-fusion op it belongs to, when the header names one.
  std::vector<std::optional<GeOriginalOp>> output_original_ops;
  bool whole_file_format = false;  // the very old form: one DumpData with data inline
  // GE recorded statistics instead of the tensors (a statistics file, ge_stats.h): `inputs` and
  // `outputs` then say only dtype and shape, and these hold what GE recorded of each.
  bool stats_only = false;
  std::vector<RecordedStats> input_stats, output_stats;
  std::vector<std::string> warnings;  // usable, but something looked off
  std::string error;                  // why the file cannot be used at all (without the path)

  bool ok() const { return error.empty(); }
  // What GE recorded of input or output i of a statistics file; nothing for a dump binary.
  std::optional<RecordedStats> recorded(Direction d, size_t i) const;
};

// Parses a GE dump from its first `size` bytes (`file_size` is the whole file's
// size). The header form needs 8 + header_len bytes; the whole-file form is tried
// only when all bytes are given. Never throws; problems land in `error`.
GeDump parse_ge_dump(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& path);

// Reads only what parse_ge_dump needs (the header, or the whole file for the old
// form when it is small enough); a statistics file (".csv") is read by read_ge_stats.
GeDump read_ge_dump(const std::string& path);

}  // namespace diagnose::compare
