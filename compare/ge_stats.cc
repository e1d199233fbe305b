#include "compare/ge_stats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "compare/layout.h"
#include "compare/text.h"
#include "ge_ir.pb.h"

namespace diagnose::compare {
namespace {

constexpr uint64_t kMaxFileBytes = uint64_t{64} << 20;
constexpr int kMaxFormatCode = 64;
constexpr size_t kMaxTensors = size_t{1} << 16;  // far more than any op has
constexpr int kNHWC = 1;                         // a transposed layout: its statistics are the logical tensor's
constexpr double kPrinted = 5e-6;                // half a unit in the sixth significant digit (C++'s default)
const char kStatsOnly[] = "statistics only: GE dumped statistics (dump_data=\"stats\"), not the tensor";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A field as messages quote it: printable ASCII only, at most 40 characters.
std::string shown(const std::string& field) {
  std::string out = field.substr(0, 40);
  for (char& c : out)
    if (c < ' ' || c > '~') c = '?';
  return field.size() > out.size() ? out + "..." : out;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// A statistic as GE prints it: a number, nan or inf of either sign, or "NA" (or nothing) where
// it computed none. False when the text is none of these.
bool parse_value(const std::string& text, std::optional<double>* out) {
  *out = std::nullopt;
  if (text.empty() || text == "NA") return true;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  *out = v;
  return true;
}

bool parse_count(const std::string& text, std::optional<uint64_t>* out) {
  std::optional<double> v;
  if (!parse_value(text, &v)) return false;
  *out = std::nullopt;
  if (!v) return true;
  if (!(*v >= 0 && *v < 9.2e18 && std::floor(*v) == *v)) return false;
  *out = static_cast<uint64_t>(*v);
  return true;
}

// "8x32", or "-" (or nothing) for a tensor without dims.
bool parse_shape(const std::string& text, Shape* out) {
  out->clear();
  if (text.empty() || text == "-") return true;
  uint64_t product = 1;
  std::istringstream in(text);
  for (std::string dim; std::getline(in, dim, 'x');) {
    if (dim.empty() || dim.size() > 18 || dim.find_first_not_of("0123456789") != std::string::npos) return false;
    const uint64_t d = std::stoull(dim);
    if (d != 0 && product > (uint64_t{1} << 62) / d) return false;
    product *= d == 0 ? 1 : d;
    out->push_back(static_cast<int64_t>(d));
  }
  return text.back() != 'x';
}

std::optional<double> finite(const std::optional<double>& v) { return v && std::isfinite(*v) ? v : std::nullopt; }

int format_code(const std::string& name) {
  for (int code = 0; code < kMaxFormatCode; ++code)
    if (ge_format_name(code) == name) return code;
  return -1;
}

struct Columns {
  std::map<std::string, size_t> at;  // lower-case name -> position
  std::optional<size_t> find(const std::string& name) const {
    const auto it = at.find(name);
    return it == at.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  std::optional<size_t> l2() const {
    for (const auto& [name, i] : at)
      if (starts_with(name, "l2norm")) return i;
    return std::nullopt;
  }
};

// One line's tensor: its place, its TensorRef and what GE recorded.
struct Line {
  bool output = false;
  size_t index = 0;
  TensorRef tensor;
  RecordedStats stats;
};

// A line of as many fields as the header; false with *error when a field is malformed.
bool parse_line(const std::vector<std::string>& f, const Columns& c, const std::string& path, Line* line,
                std::string* error, std::vector<std::string>* warnings) {
  const std::string io = lower(f[*c.find("input/output")]);
  if (io != "input" && io != "output") {
    *error = "Input/Output is '" + shown(f[*c.find("input/output")]) + "'";
    return false;
  }
  line->output = io == "output";
  const std::string& index = f[*c.find("index")];
  if (index.empty() || index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos) {
    *error = "Index is '" + shown(index) + "'";
    return false;
  }
  line->index = std::stoul(index);

  TensorRef& t = line->tensor;
  t.path = path;
  t.error = kStatsOnly;
  const std::string& shape = f[*c.find("shape")];
  if (!parse_shape(shape, &t.shape)) {
    *error = "Shape is '" + shown(shape) + "'";
    return false;
  }
  t.stored_shape = t.shape;
  const std::string& dtype = f[*c.find("data type")];
  ge::proto::DataType code;
  std::string unsupported;
  t.dtype = ge::proto::DataType_Parse(dtype, &code) ? dtype_from_ge(code, &unsupported) : DType::Unknown;
  t.source_dtype = "GE " + shown(starts_with(dtype, "DT_") ? dtype.substr(3) : dtype);
  if (const auto size = c.find("data size")) {
    std::optional<uint64_t> bytes;
    if (parse_count(f[*size], &bytes) && bytes) t.byte_size = *bytes;
  }
  bool padded = false;  // a private layout: its extremes and mean take in the padding
  if (const auto format = c.find("format")) {
    const int code_of_format = format_code(f[*format]);
    if (code_of_format >= 0) t.format = code_of_format;
    padded = code_of_format >= 0 && !is_plain_format(code_of_format) && code_of_format != kNHWC;
    if (padded)
      warnings->push_back((line->output ? "output " : "input ") + index + " is stored as " + shown(f[*format]) +
                          ": its extremes and mean cover the device layout, padding included, and are left out");
  }

  RecordedStats& s = line->stats;
  s.rounding = kPrinted;
  const auto value = [&](const char* name, std::optional<double>* out) {
    const auto at = c.find(name);
    if (!at || parse_value(f[*at], out)) return true;
    *error = std::string(name) + " is '" + shown(f[*at]) + "'";
    return false;
  };
  std::optional<double> max, min, mean, l2;
  if (!value("max value", &max) || !value("min value", &min) || !value("avg value", &mean)) return false;
  if (const auto at = c.l2(); at && !parse_value(f[*at], &l2)) {
    *error = "l2norm is '" + shown(f[*at]) + "'";
    return false;
  }
  if (!padded) {
    s.max = finite(max);  // GE's extremes take in infinities; the recorded ones are over finite elements
    s.min = finite(min);
    s.mean = finite(mean);
    s.l2 = finite(l2);
  }
  std::optional<uint64_t> counts[3];
  const char* count_names[3] = {"nan count", "negative inf count", "positive inf count"};
  s.counts_known = true;
  for (int i = 0; i < 3; ++i) {
    const auto at = c.find(count_names[i]);
    if (at && !parse_count(f[*at], &counts[i])) {
      *error = std::string(count_names[i]) + " is '" + shown(f[*at]) + "'";
      return false;
    }
    s.counts_known = s.counts_known && counts[i].has_value();
  }
  if (s.counts_known) {
    s.nan = *counts[0];
    s.inf = *counts[1] + *counts[2];
  }
  std::optional<uint64_t> count;
  if (const auto at = c.find("count"); at && parse_count(f[*at], &count) && count && *count != t.elements())
    warnings->push_back((line->output ? "output " : "input ") + index + ": Count is " + std::to_string(*count) +
                        ", its shape " + shown(shape) + " holds " + std::to_string(t.elements()));
  return true;
}

// Places the lines of one direction by index: each of 0..n-1 exactly once.
bool place(const std::vector<Line>& lines, bool output, GeDump* d, std::string* error) {
  std::vector<const Line*> by_index;
  for (const Line& l : lines) {
    if (l.output != output) continue;
    if (l.index >= lines.size()) {
      *error = std::string(output ? "output " : "input ") + std::to_string(l.index) + " in a file of " +
               std::to_string(lines.size()) + " tensors";
      return false;
    }
    if (l.index >= by_index.size()) by_index.resize(l.index + 1, nullptr);
    if (by_index[l.index]) {
      *error = std::string(output ? "output " : "input ") + std::to_string(l.index) + " is listed twice";
      return false;
    }
    by_index[l.index] = &l;
  }
  for (size_t i = 0; i < by_index.size(); ++i) {
    if (!by_index[i]) {
      *error = std::string(output ? "outputs" : "inputs") + " up to " + std::to_string(by_index.size() - 1) +
               " are listed, but not " + std::to_string(i);
      return false;
    }
    (output ? d->outputs : d->inputs).push_back(by_index[i]->tensor);
    (output ? d->output_stats : d->input_stats).push_back(by_index[i]->stats);
  }
  return true;
}

}  // namespace

GeDump parse_ge_stats(const std::string& text, const std::string& path) {
  GeDump d;
  d.path = path;
  d.file_size = text.size();
  d.stats_only = true;
  if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) > kMaxTensors + 1) {
    d.error = "more than " + std::to_string(kMaxTensors) + " lines of tensors: not one op's statistics";
    return d;
  }
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) {
    d.error = "empty statistics file";
    return d;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  Columns columns;
  const std::vector<std::string> header = fields_of(line);
  for (size_t i = 0; i < header.size(); ++i) columns.at.emplace(lower(header[i]), i);
  for (const char* required : {"input/output", "index", "data type", "shape"}) {
    if (!columns.find(required)) {
      d.error = "the header has no '" + std::string(required) + "' column: not a GE statistics file";
      return d;
    }
  }
  std::vector<Line> lines;
  for (size_t number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> fields = fields_of(line);
    std::string error;
    Line parsed;
    if (fields.size() != header.size()) {
      error = std::to_string(fields.size()) + " fields, the header has " + std::to_string(header.size());
    }
    if (!error.empty() || !parse_line(fields, columns, path, &parsed, &error, &d.warnings)) {
      d.error = "line " + std::to_string(number) + ": " + error;
      return d;
    }
    lines.push_back(std::move(parsed));
  }
  std::string error;
  if (!place(lines, false, &d, &error) || !place(lines, true, &d, &error)) {
    d.error = error;
    return d;
  }
  if (d.inputs.empty() && d.outputs.empty()) d.error = "no tensor in the statistics file";
  return d;
}

GeDump read_ge_stats(const std::string& path) {
  GeDump d;
  d.path = path;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  std::ifstream file(path, std::ios::binary);
  if (ec || !file) {
    d.error = "cannot read the statistics file" + (ec ? ": " + ec.message() : std::string());
    return d;
  }
  if (size > kMaxFileBytes) {
    d.error = "statistics file of " + std::to_string(size) + " bytes, more than " +
              std::to_string(kMaxFileBytes >> 20) + " MiB";
    return d;
  }
  std::string text(static_cast<size_t>(size), '\0');
  file.read(&text[0], static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(file.gcount()));
  return parse_ge_stats(text, path);
}

}  // namespace diagnose::compare
