#include "compare/ge_dump.h"
#include "compare/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "compare/dtype.h"
#include "compare/ge_stats.h"
#include "compare/layout.h"
#include "ge_dump.pb.h"
#include "ge_ir.pb.h"

namespace diagnose::compare {
namespace {

constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxWholeFileBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxDim = uint64_t{1} << 62;
const char kStatsSuffix[] = ".csv";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

bool parse_int(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool is_timestamp(const std::string& s) {
  int64_t unused;
  return s.size() == 16 && parse_int(s, &unused);
}

std::string join(const std::vector<std::string>& parts, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) out += (i > begin ? "." : "") + parts[i];
  return out;
}

bool set_why(std::string* why, const std::string& text) {
  if (why) *why = text;
  return false;
}

// ---- wire-format walking, for the data offsets of the whole-file form ----

bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t b = *p++;
    *v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Calls visit(field, wire_type, value_begin, value_end) for each field of a message;
// false on malformed input.
template <typename Visit>
bool walk_fields(const uint8_t* begin, const uint8_t* end, Visit visit) {
  const uint8_t* p = begin;
  while (p < end) {
    uint64_t tag;
    if (!read_varint(p, end, &tag)) return false;
    const int wire = static_cast<int>(tag & 7);
    const uint64_t field = tag >> 3;
    const uint8_t* value = p;
    uint64_t n;
    switch (wire) {
      case 0:
        if (!read_varint(p, end, &n)) return false;
        break;
      case 1:
        if (end - p < 8) return false;
        p += 8;
        break;
      case 2:
        if (!read_varint(p, end, &n) || n > static_cast<uint64_t>(end - p)) return false;
        value = p;
        p += n;
        break;
      case 5:
        if (end - p < 4) return false;
        p += 4;
        break;
      default: return false;
    }
    visit(field, wire, value, p);
  }
  return true;
}

struct Span {
  uint64_t offset = 0, size = 0;
};

// Offsets (from `base`) of the `data_field` bytes inside each `field` submessage.
bool locate_data(const uint8_t* base, const uint8_t* begin, const uint8_t* end, uint64_t field, uint64_t data_field,
                 std::vector<Span>* out) {
  bool ok = true;
  const bool walked = walk_fields(begin, end, [&](uint64_t f, int wire, const uint8_t* b, const uint8_t* e) {
    if (f != field || wire != 2) return;
    Span span;
    ok &= walk_fields(b, e, [&](uint64_t sf, int swire, const uint8_t* sb, const uint8_t* se) {
      if (sf == data_field && swire == 2) span = {static_cast<uint64_t>(sb - base), static_cast<uint64_t>(se - sb)};
    });
    out->push_back(span);
  });
  return walked && ok;
}

// ---- tensors ----

std::string ge_dtype_label(int code) {
  if (ge::proto::DataType_IsValid(code)) {
    const std::string& name = ge::proto::DataType_Name(static_cast<ge::proto::DataType>(code));
    return "GE " + (name.rfind("DT_", 0) == 0 ? name.substr(3) : name);
  }
  return "GE dtype " + std::to_string(code);
}

bool to_shape(const toolkit::dump::Shape& s, Shape* out) {
  out->clear();
  for (uint64_t d : s.dim()) {
    if (d > kMaxDim) return false;
    out->push_back(static_cast<int64_t>(d));
  }
  return true;
}

bool element_count_fits(const Shape& s) {
  uint64_t p = 1;
  for (int64_t d : s) {
    if (d != 0 && p > kMaxDim / static_cast<uint64_t>(d)) return false;
    p *= static_cast<uint64_t>(d);
  }
  return true;
}

// A dumped input or output. `label` names it in messages ("input 0").
TensorRef make_tensor(const std::string& path, uint64_t offset, uint64_t byte_size, int data_type, int format,
                      const toolkit::dump::Shape& shape, const toolkit::dump::Shape& original_shape,
                      const std::string& label) {
  TensorRef t;
  t.path = path;
  t.offset = offset;
  t.byte_size = byte_size;
  // GE may pack sub-format and C0 bits above the primary format (GetPrimaryFormat).
  format &= 0xFF;
  t.format = format;
  t.source_dtype = ge_dtype_label(data_type);
  Shape original;
  if (!to_shape(shape, &t.stored_shape) || !to_shape(original_shape, &original) ||
      !element_count_fits(t.stored_shape)) {
    t.error = label + ": shape dims are out of range";
    return t;
  }
  t.shape = t.stored_shape;
  std::string reason;
  t.dtype = dtype_from_ge(data_type, &reason);
  if (t.dtype == DType::Unknown) {
    t.error = reason.empty() ? "unsupported dtype " + t.source_dtype : reason;
    return t;
  }
  if (!is_plain_format(format)) {
    const auto logical = plan_logical_shape(format, t.stored_shape, original, &reason);
    if (!logical) {
      t.error = reason;
      return t;
    }
    t.shape = *logical;
  }
  const uint64_t needed = bytes_for_elements(t.dtype, element_count(t.stored_shape));
  if (byte_size < needed) {
    t.error = label + " holds " + std::to_string(byte_size) + " bytes, but " + shape_to_string(t.stored_shape) +
              " of " + t.source_dtype + " needs " + std::to_string(needed);
  }
  return t;
}

TensorRef make_raw(const std::string& path, uint64_t offset, uint64_t byte_size) {
  TensorRef t;
  t.path = path;
  t.offset = offset;
  t.byte_size = byte_size;
  t.dtype = DType::UInt8;
  t.shape = t.stored_shape = {static_cast<int64_t>(byte_size)};
  t.source_dtype = "raw bytes";
  return t;
}

// Old schemas put workspaces in field 7, where newer ones put OpAttr. A Workspace
// parse of an OpAttr leaves its string name as an unknown field.
std::vector<toolkit::dump::Workspace> old_schema_workspaces(const toolkit::dump::DumpData& dd) {
  std::vector<toolkit::dump::Workspace> out;
  for (const std::string& raw : dd.attr_or_old_space()) {
    toolkit::dump::Workspace w;
    if (w.ParseFromString(raw) && w.GetReflection()->GetUnknownFields(w).empty() && w.size() > 0) {
      out.push_back(w);
    }
  }
  return out;
}

std::vector<toolkit::dump::Workspace> all_workspaces(const toolkit::dump::DumpData& dd) {
  auto out = old_schema_workspaces(dd);
  out.insert(out.end(), dd.space().begin(), dd.space().end());
  return out;
}

void fill_original_ops(const toolkit::dump::DumpData& dd, GeDump* d) {
  d->op_name = dd.op_name();
  for (const auto& o : dd.output()) {
    if (o.has_original_op() && !o.original_op().name().empty()) {
      d->output_original_ops.push_back(
          GeOriginalOp{o.original_op().name(), static_cast<int>(o.original_op().output_index())});
    } else {
      d->output_original_ops.push_back(std::nullopt);
    }
  }
}

bool add_size(uint64_t* total, uint64_t size) {
  if (size > std::numeric_limits<uint64_t>::max() - *total) return false;
  *total += size;
  return true;
}

bool parse_header_form(const uint8_t* bytes, size_t size, uint64_t file_size, GeDump* d, std::string* error) {
  if (file_size <= 8) {
    *error = "file is " + std::to_string(file_size) + " bytes, too small for a GE dump";
    return false;
  }
  if (size < 8) {
    *error = "fewer than 8 bytes given";
    return false;
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > file_size - 8) {
    *error = "header length " + std::to_string(header_len) + " runs past the end of the file (" +
             std::to_string(file_size) + " bytes)";
    return false;
  }
  if (header_len > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    *error = "header length " + std::to_string(header_len) + " is too large for a protobuf message";
    return false;
  }
  if (size - 8 < header_len) {
    *error = "only " + std::to_string(size - 8) + " of the " + std::to_string(header_len) + " header bytes were read";
    return false;
  }
  toolkit::dump::DumpData dd;
  if (!dd.ParseFromArray(bytes + 8, static_cast<int>(header_len))) {
    *error = "the " + std::to_string(header_len) + "-byte header is not a valid DumpData protobuf";
    return false;
  }
  const auto workspaces = all_workspaces(dd);
  uint64_t total = 0;
  bool fits = true;
  for (const auto& t : dd.input()) fits &= add_size(&total, t.size());
  for (const auto& t : dd.output()) fits &= add_size(&total, t.size());
  for (const auto& t : dd.buffer()) fits &= add_size(&total, t.size());
  for (const auto& t : workspaces) fits &= add_size(&total, t.size());
  const uint64_t available = file_size - 8 - header_len;
  if (!fits || total > available) {
    *error = "tensor sizes in the header add up to " + (fits ? std::to_string(total) : "more than 2^64") +
             " bytes, but only " + std::to_string(available) + " bytes follow the header";
    return false;
  }
  if (total < available) {
    d->warnings.push_back(std::to_string(available - total) +
                          " bytes after the last tensor are not described by the header");
  }
  uint64_t offset = 8 + header_len;
  for (int i = 0; i < dd.input_size(); ++i) {
    const auto& t = dd.input(i);
    d->inputs.push_back(make_tensor(d->path, offset, t.size(), t.data_type(), t.format(), t.shape(), t.original_shape(),
                                    "input " + std::to_string(i)));
    offset += t.size();
  }
  for (int i = 0; i < dd.output_size(); ++i) {
    const auto& t = dd.output(i);
    d->outputs.push_back(make_tensor(d->path, offset, t.size(), t.data_type(), t.format(), t.shape(),
                                     t.original_shape(), "output " + std::to_string(i)));
    offset += t.size();
  }
  for (const auto& b : dd.buffer()) {
    d->buffers.push_back(make_raw(d->path, offset, b.size()));
    offset += b.size();
  }
  for (const auto& w : workspaces) {
    d->workspaces.push_back(make_raw(d->path, offset, w.size()));
    offset += w.size();
  }
  fill_original_ops(dd, d);
  return true;
}

// The very old form: the whole file is one DumpData whose data fields hold the bytes.
bool parse_whole_file_form(const uint8_t* bytes, size_t size, GeDump* d) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  toolkit::dump::DumpData dd;
  if (!dd.ParseFromArray(bytes, static_cast<int>(size))) return false;
  if (dd.input_size() + dd.output_size() == 0) return false;
  for (const auto& t : dd.input())
    if (t.size() != 0 && t.size() != t.data().size()) return false;
  for (const auto& t : dd.output())
    if (t.size() != 0 && t.size() != t.data().size()) return false;
  std::vector<Span> inputs, outputs;
  if (!locate_data(bytes, bytes, bytes + size, 4, 4, &inputs) ||
      !locate_data(bytes, bytes, bytes + size, 3, 5, &outputs) ||
      inputs.size() != static_cast<size_t>(dd.input_size()) ||
      outputs.size() != static_cast<size_t>(dd.output_size())) {
    return false;
  }
  for (int i = 0; i < dd.input_size(); ++i) {
    const auto& t = dd.input(i);
    d->inputs.push_back(make_tensor(d->path, inputs[i].offset, inputs[i].size, t.data_type(), t.format(), t.shape(),
                                    t.original_shape(), "input " + std::to_string(i)));
  }
  for (int i = 0; i < dd.output_size(); ++i) {
    const auto& t = dd.output(i);
    d->outputs.push_back(make_tensor(d->path, outputs[i].offset, outputs[i].size, t.data_type(), t.format(), t.shape(),
                                     t.original_shape(), "output " + std::to_string(i)));
  }
  fill_original_ops(dd, d);
  d->whole_file_format = true;
  return true;
}

bool read_at(int fd, uint64_t offset, size_t n, std::vector<uint8_t>* out, std::string* error) {
  out->resize(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = pread(fd, out->data() + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *error = r < 0 ? std::string("read failed: ") + std::strerror(errno) : "file shrank while reading";
      return false;
    }
    done += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

std::string sanitize_ge_name(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c == '.' || c == '/' || c == '\\' || c == ' ') c = '_';
  return out;
}

std::optional<GeDumpName> parse_ge_dump_name(const std::string& file_name, std::string* why) {
  for (const char* ext : {".txt", ".npy", ".bin"}) {
    if (ends_with(file_name, ext)) {
      set_why(why, std::string("not a GE dump (") + ext + " file)");
      return std::nullopt;
    }
  }
  GeDumpName name;
  name.stats = ends_with(file_name, kStatsSuffix);
  const auto parts = split(name.stats ? file_name.substr(0, file_name.size() - 4) : file_name, '.');
  const size_t n = parts.size();
  if (n >= 5 && is_timestamp(parts[n - 1]) && parse_int(parts[n - 3], &name.task_id) &&
      parse_int(parts[n - 2], &name.stream_id)) {
    parse_int(parts[n - 1], &name.timestamp);
    name.op_type = parts[0];
    name.op_name = join(parts, 1, n - 3);
  } else if (n >= 8 && is_timestamp(parts[n - 5]) && parse_int(parts[n - 6], &name.task_id) &&
             parse_int(parts[n - 3], &name.context_id) && parse_int(parts[n - 2], &name.thread_id) &&
             parse_int(parts[n - 1], &name.device_id) && !parts[n - 4].empty()) {
    name.ffts = true;
    parse_int(parts[n - 5], &name.timestamp);
    name.task_type = parts[n - 4];
    size_t name_end = n - 6;
    if (n >= 9 && parse_int(parts[n - 7], &name.stream_id))
      name_end = n - 7;
    else
      name.stream_id = -1;
    name.op_type = parts[0];
    name.op_name = join(parts, 1, name_end);
  } else {
    set_why(why,
            "not a GE dump name ({op_type}.{op_name}.{task_id}.{stream_id}.{16-digit timestamp} or its FFTS+ form)");
    return std::nullopt;
  }
  if (name.op_type.empty() || name.op_name.empty()) {
    set_why(why, "GE dump name without op type or op name");
    return std::nullopt;
  }
  return name;
}

std::optional<RecordedStats> GeDump::recorded(Direction d, size_t i) const {
  const auto& stats = d == Direction::Input ? input_stats : output_stats;
  return stats_only && i < stats.size() ? std::optional<RecordedStats>(stats[i]) : std::nullopt;
}

GeDump parse_ge_dump(const uint8_t* bytes, size_t size, uint64_t file_size, const std::string& path) {
  if (size > file_size) size = static_cast<size_t>(file_size);
  GeDump d;
  d.path = path;
  d.file_size = file_size;
  std::string error;
  if (parse_header_form(bytes, size, file_size, &d, &error)) return d;
  if (size == file_size) {
    GeDump old;
    old.path = path;
    old.file_size = file_size;
    if (parse_whole_file_form(bytes, size, &old)) return old;
  }
  GeDump failed;
  failed.path = path;
  failed.file_size = file_size;
  failed.error = error;
  return failed;
}

GeDump read_ge_dump(const std::string& path) {
  if (ends_with(path, kStatsSuffix)) return read_ge_stats(path);
  GeDump d;
  d.path = path;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    d.error = std::string("cannot open: ") + std::strerror(errno);
    return d;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    d.error = "not a regular file";
    close(fd);
    return d;
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  std::vector<uint8_t> buf;
  std::string error;
  if (!read_at(fd, 0, static_cast<size_t>(std::min<uint64_t>(file_size, 8)), &buf, &error)) {
    d.error = error;
    close(fd);
    return d;
  }
  uint64_t header_len = 0;
  if (buf.size() == 8)
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | buf[i];
  const bool header_fits = buf.size() == 8 && header_len <= file_size - 8 && header_len <= kMaxHeaderBytes;
  if (header_fits) {
    if (!read_at(fd, 0, static_cast<size_t>(8 + header_len), &buf, &error)) {
      d.error = error;
      close(fd);
      return d;
    }
  }
  d = parse_ge_dump(buf.data(), buf.size(), file_size, path);
  if (!d.ok() && file_size > buf.size() && file_size <= kMaxWholeFileBytes &&
      read_at(fd, 0, static_cast<size_t>(file_size), &buf, &error)) {
    GeDump whole = parse_ge_dump(buf.data(), buf.size(), file_size, path);
    if (whole.ok()) d = whole;
  }
  close(fd);
  return d;
}

}  // namespace diagnose::compare
