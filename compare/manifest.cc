#include "compare/manifest.h"

#include <fstream>

#include "compare/json_field.h"
#include "compare/npy.h"

namespace diagnose::compare {

std::optional<ManifestRecord> tensor_record(const nlohmann::json& j, std::string* why) {
  ManifestRecord record;
  try {
    if (!j.contains("seq") || !j.contains("op_key") || !j.contains("io") || !j.contains("index")) {
      *why = "tensor record needs seq, op_key, io and index";
      return std::nullopt;
    }
    record.seq = j.at("seq").get<int64_t>();
    record.op_key = j.at("op_key").get<std::string>();
    record.io = j.at("io").get<std::string>();
    if (record.io != "input" && record.io != "output") {
      *why = "io must be \"input\" or \"output\", not \"" + record.io + "\"";
      return std::nullopt;
    }
    record.index = j.at("index").get<int>();
    if (j.contains("item") && !j["item"].is_null()) record.item = j["item"].get<int>();
    record.path = j.value("path", std::string());
    record.kind = j.value("kind", std::string("op"));
    record.op = j.value("op", std::string());
    record.file = j.value("file", std::string());
    record.truth_file = j.value("truth_file", std::string());
    record.truth_delta_file = j.value("truth_delta_file", std::string());
    record.not_kept = j.value("not_kept", std::string());
    record.precision = j.value("precision", std::string());
    record.dtype = j.value("dtype", std::string());
    if (j.contains("shape")) record.shape = j["shape"].get<Shape>();
    record.module = j.value("module", std::string());
    record.leaves = j.value("leaves", std::string());
    if (j.contains("value_of") && j["value_of"].is_string()) record.value_of = j["value_of"].get<std::string>();
    for (auto [field, nodes] : {std::pair{"fx_nodes", &record.fx_nodes}, {"graph_nodes", &record.graph_nodes}})
      if (j.contains(field) && j[field].is_array())
        for (const auto& node : j[field])
          if (node.is_string()) nodes->push_back(node.get<std::string>());
    const auto flagged = [](const nlohmann::json& o) {
      return o.contains("nonfinite_constant") && o["nonfinite_constant"] == true;
    };
    record.nonfinite_constant = flagged(j);
    if (j.contains("sources") && j["sources"].is_array())
      for (const auto& source : j["sources"])
        if (source.is_object()) {
          record.nonfinite_constant = record.nonfinite_constant || flagged(source);
          record.sources.push_back({source.value("node", std::string()), source.value("module", std::string()),
                                    source.value("custom_op", std::string()), source.value("line", std::string()),
                                    source.value("code", std::string())});
        }
    if (j.contains("graph") && j["graph"].is_number_integer()) record.graph = j["graph"].get<int>();
    if (j.contains("step") && j["step"].is_number_integer()) record.step = j["step"].get<int64_t>();
    if (j.contains("stats")) record.stats = j["stats"];
    return record;
  } catch (const nlohmann::json::exception& e) {
    *why = std::string("bad field type: ") + e.what();
    return std::nullopt;
  }
}

bool leaves_dump_directory(const std::string& file) {
  return file.empty() || file[0] == '/' || ("/" + file + "/").find("/../") != std::string::npos;
}

namespace {

// An error ref when `file` would leave the dump directory, else nullopt.
std::optional<TensorRef> escaping_path(const std::string& file) {
  if (!leaves_dump_directory(file)) return std::nullopt;
  TensorRef ref;
  ref.path = file;
  ref.error = "record file path leaves the dump directory";
  return ref;
}

}  // namespace

std::string ManifestRecord::name() const { return path.empty() ? op_key : op_key + "." + path; }

std::string ManifestRecord::match_key() const {
  return "graph" + std::to_string(graph) + "/step" + std::to_string(step) + "/" + identity();
}

std::string ManifestRecord::positional_match_key() const {
  return "graph" + std::to_string(graph) + "/step" + std::to_string(step) + "/" + positional_identity();
}

std::string ManifestRecord::identity() const { return path.empty() ? positional_identity() : name(); }

std::string ManifestRecord::positional_identity() const {
  std::string id = op_key + (io == "input" ? ".INPUT." : ".OUTPUT.") + std::to_string(index);
  if (item) id += "." + std::to_string(*item);
  return id;
}

Manifest read_manifest(const std::string& dir) {
  Manifest m;
  m.dir = dir;
  const std::string path = dir + "/manifest.jsonl";
  std::ifstream in(path);
  if (!in) {
    m.error = "cannot read " + path;
    return m;
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      m.warnings.push_back(where + (in.peek() == EOF ? "torn last record ignored (writer stopped mid-line)"
                                                     : "unparsable record ignored"));
      continue;
    }
    const std::string type = string_at(j, "type");
    if (line_no == 1 || type == "header") {
      if (type != "header" || string_at(j, "format") != "diagnose-dump") {
        m.error =
            where + "not a diagnose dump (first record must be {\"type\": \"header\", \"format\": \"diagnose-dump\"})";
        return m;
      }
      const int version = j.contains("version") && j["version"].is_number_integer() ? j["version"].get<int>() : 0;
      if (version < 1 || version > kDumpFormatVersion) {
        m.error = where + "dump format version " + std::to_string(version) +
                  " is not supported (this diagnose reads version " + std::to_string(kDumpFormatVersion) + ")";
        return m;
      }
      m.header = j;
    } else if (type == "tensor") {
      std::string why;
      if (std::optional<ManifestRecord> r = tensor_record(j, &why))
        m.records.push_back(std::move(*r));
      else
        m.warnings.push_back(where + why);
    } else if (type == "budget") {
      m.budget_limit = j.contains("limit_bytes") && j["limit_bytes"].is_number_integer()
                           ? j["limit_bytes"].get<int64_t>()
                           : int64_t{0};
    } else if (type == "end") {
      m.complete = true;
    }
  }
  if (!m.complete) m.warnings.push_back(path + ": partial dump (no end record; the writer did not finish)");
  return m;
}

std::optional<RecordedStats> recorded_stats(const ManifestRecord& record) {
  if (!record.stats.is_object()) return std::nullopt;
  const nlohmann::json& j = record.stats;
  const auto number = [&](const char* key) -> std::optional<double> {
    if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
    return std::nullopt;
  };
  const auto count = [&](const char* key) -> uint64_t {
    return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
  };
  RecordedStats s;
  s.min = number("min");
  s.max = number("max");
  s.mean = number("mean");
  s.l2 = number("l2");
  s.nan = count("nan");
  s.inf = count("inf");
  s.hash = string_at(j, "hash");
  return s;
}

namespace {

// A tensor file holds its elements in C order; records that view equal contents at other shapes
// share one file, whose header has the first one's shape (docs/dump-format.md): the record's
// shape rules wherever the element counts agree.
void view_at_record_shape(const ManifestRecord& record, const std::string& what, TensorRef& ref) {
  if (!ref.ok() || ref.shape == record.shape) return;
  const std::string shapes =
      "the record says shape " + shape_to_string(record.shape) + ", the " + what + " " + shape_to_string(ref.shape);
  if (element_count(record.shape) != element_count(ref.shape)) {
    if (!record.shape.empty()) ref.error = shapes;
  } else if (ref.fortran_order && ref.shape.size() > 1) {
    ref.error = shapes + " in column-major order, which holds its elements in another order";
  } else {
    ref.shape = record.shape;
  }
}

}  // namespace

std::optional<TensorRef> manifest_truth(const Manifest& manifest, const ManifestRecord& record) {
  const std::string& file = record.truth_delta_file.empty() ? record.truth_file : record.truth_delta_file;
  if (file.empty()) return std::nullopt;
  if (auto bad = escaping_path(file)) return bad;
  TensorRef ref = read_npy(manifest.dir + "/" + file);
  view_at_record_shape(record, "truth holds", ref);
  if (!ref.ok() || record.truth_delta_file.empty()) return ref;
  TensorRef value = manifest_tensor(manifest, record);
  if (!value.ok())
    ref.error = "the truth is stored as its difference from the record's tensor, which cannot be read: " + value.error;
  else if (scalars_per_element(value.dtype) != scalars_per_element(ref.dtype))
    ref.error = "the truth's difference and the record's tensor differ in kind (one complex, one real)";
  else
    ref.plus = std::make_shared<const TensorRef>(std::move(value));
  return ref;
}

TensorRef manifest_tensor(const Manifest& manifest, const ManifestRecord& record) {
  if (record.file.empty()) {
    TensorRef ref;
    ref.path = manifest.dir + "/manifest.jsonl";
    ref.dtype = dtype_from_name(record.dtype);
    ref.shape = record.shape;
    if (record.not_kept == "budget")
      ref.error = "statistics only: the dump's byte budget" +
                  (manifest.budget_limit ? " (" + std::to_string(*manifest.budget_limit) + " bytes)" : std::string()) +
                  " was reached before this tensor";
    else if (record.not_kept == "stats_only")
      ref.error = "statistics only: the run dumped statistics, no tensors";
    else
      ref.error = "statistics only: tensor not dumped";
    return ref;
  }
  if (auto bad = escaping_path(record.file)) return *bad;
  TensorRef ref = read_npy(manifest.dir + "/" + record.file);
  if (!ref.ok()) return ref;
  // Types numpy lacks (bf16, fp8) are stored as raw bits in an unsigned integer of
  // the same width: reinterpret them. A wider storage type means a widened copy.
  const DType declared = dtype_from_name(record.dtype);
  if (declared != DType::Unknown && declared != ref.dtype) {
    if (bit_width(declared) == bit_width(ref.dtype))
      ref.dtype = declared;
    else
      ref.declared_dtype = declared;
  }
  view_at_record_shape(record, "file holds", ref);
  return ref;
}

}  // namespace diagnose::compare
