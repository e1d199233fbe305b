#include "compare/report.h"

#include "compare/json_number.h"
#include "compare/uninitialized_ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <ostream>
#include <stdexcept>
#include <variant>

namespace diagnose::compare {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMsitColumns = {"token_id",
                                               "data_id",
                                               "golden_data_path",
                                               "golden_op_type",
                                               "golden_dtype",
                                               "golden_shape",
                                               "golden_max_value",
                                               "golden_min_value",
                                               "golden_mean_value",
                                               "my_data_path",
                                               "my_op_type",
                                               "my_dtype",
                                               "my_shape",
                                               "my_max_value",
                                               "my_min_value",
                                               "my_mean_value",
                                               "cosine_similarity",
                                               "max_relative_error",
                                               "mean_relative_error",
                                               "max_absolute_error",
                                               "mean_absolute_error",
                                               "kl_divergence",
                                               "relative_euclidean_distance",
                                               "cmp_fail_reason"};

const std::vector<std::string> kExtraColumns = {"verdict",
                                                "judged_by",
                                                "op_key",
                                                "io",
                                                "index",
                                                "elements",
                                                "shape_mismatch",
                                                "rmse",
                                                "max_ulp_error",
                                                "mean_ulp_error",
                                                "snr_db",
                                                "allclose_violations",
                                                "golden_nan_count",
                                                "golden_inf_count",
                                                "my_nan_count",
                                                "my_inf_count",
                                                "referee_rmse_golden",
                                                "referee_rmse_mine",
                                                "truth_bound"};

// msit's reasons first, then the project's own.
std::string reason_text(const Row& row) {
  std::string out;
  for (const auto& r : row.reasons) out += (out.empty() ? "" : " ") + r;
  return out;
}

// Cells of one row, by column name; monostate for an empty cell. Numbers stay
// doubles so CSV and JSON format them each their own way.
using Cell = std::variant<std::monostate, std::string, double, int64_t, bool, std::vector<int64_t>>;

std::vector<std::pair<std::string, Cell>> row_cells(const Row& row) {
  const RowSpec& s = row.spec;
  std::vector<std::pair<std::string, Cell>> c;
  const auto side = [&](const std::optional<TensorRef>& t, const std::optional<SideStats>& stats,
                        const std::string& prefix, const std::string& path, const std::string& op_type) {
    c.emplace_back(prefix + "_data_path", path);
    c.emplace_back(prefix + "_op_type", op_type);
    const bool known = t && t->dtype != DType::Unknown;
    c.emplace_back(prefix + "_dtype", known ? Cell(torch_name(t->logical_dtype())) : Cell());
    c.emplace_back(prefix + "_shape", t && (known || !t->shape.empty()) ? Cell(t->shape) : Cell());
    const bool has_values = stats && t && t->elements() > 0;
    c.emplace_back(prefix + "_max_value", has_values ? Cell(stats->max) : Cell());
    c.emplace_back(prefix + "_min_value", has_values ? Cell(stats->min) : Cell());
    c.emplace_back(prefix + "_mean_value", has_values ? Cell(stats->mean) : Cell());
  };
  c.emplace_back("token_id", s.token_id);
  c.emplace_back("data_id", row.data_id);
  side(s.golden, row.golden_stats, "golden", s.golden_path, s.golden_op_type);
  side(s.mine, row.my_stats, "my", s.my_path, s.my_op_type);
  const PairMetrics* m = row.metrics ? &*row.metrics : nullptr;
  const auto metric = [&](double PairMetrics::*field) { return m && row.metrics_valid ? Cell(m->*field) : Cell(); };
  c.emplace_back("cosine_similarity", metric(&PairMetrics::cosine_similarity));
  c.emplace_back("max_relative_error", metric(&PairMetrics::max_relative_error));
  c.emplace_back("mean_relative_error", metric(&PairMetrics::mean_relative_error));
  c.emplace_back("max_absolute_error", metric(&PairMetrics::max_absolute_error));
  c.emplace_back("mean_absolute_error", metric(&PairMetrics::mean_absolute_error));
  c.emplace_back("kl_divergence", metric(&PairMetrics::kl_divergence));
  c.emplace_back("relative_euclidean_distance", metric(&PairMetrics::relative_euclidean_distance));
  c.emplace_back("cmp_fail_reason", reason_text(row));
  c.emplace_back("verdict", verdict_name(row.verdict));
  c.emplace_back("judged_by", row.judged_by);
  c.emplace_back("op_key", s.op_key);
  c.emplace_back("io", std::string(s.direction == Direction::Input ? "input" : "output"));
  c.emplace_back("index", static_cast<int64_t>(s.index));
  c.emplace_back("elements", m ? Cell(static_cast<int64_t>(m->elements)) : Cell());
  c.emplace_back("shape_mismatch", row.shape_differs);
  c.emplace_back("rmse", metric(&PairMetrics::rmse));
  c.emplace_back("max_ulp_error", metric(&PairMetrics::max_ulp_error));
  c.emplace_back("mean_ulp_error", metric(&PairMetrics::mean_ulp_error));
  c.emplace_back("snr_db", metric(&PairMetrics::snr_db));
  c.emplace_back("allclose_violations", m ? Cell(static_cast<int64_t>(m->allclose_violations)) : Cell());
  const auto count = [](const std::optional<SideStats>& st, uint64_t SideStats::*field) {
    return st ? Cell(static_cast<int64_t>((*st).*field)) : Cell();
  };
  c.emplace_back("golden_nan_count", count(row.golden_stats, &SideStats::nan_count));
  c.emplace_back("golden_inf_count", count(row.golden_stats, &SideStats::inf_count));
  c.emplace_back("my_nan_count", count(row.my_stats, &SideStats::nan_count));
  c.emplace_back("my_inf_count", count(row.my_stats, &SideStats::inf_count));
  c.emplace_back("referee_rmse_golden", row.referee_rmse_golden ? Cell(*row.referee_rmse_golden) : Cell());
  c.emplace_back("referee_rmse_mine", row.referee_rmse_mine ? Cell(*row.referee_rmse_mine) : Cell());
  c.emplace_back("truth_bound", row.truth_bound ? Cell(*row.truth_bound) : Cell());
  return c;
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string csv_text(const Cell& cell) {
  struct Visitor {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(const std::string& s) const { return csv_quote(s); }
    std::string operator()(double v) const { return python_float_repr(v); }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(bool v) const { return v ? "True" : "False"; }
    std::string operator()(const std::vector<int64_t>& s) const { return csv_quote(shape_to_string(s)); }
  };
  return std::visit(Visitor{}, cell);
}

nlohmann::json json_value(const Cell& cell) {
  struct Visitor {
    nlohmann::json operator()(std::monostate) const { return nullptr; }
    nlohmann::json operator()(const std::string& s) const { return s; }
    nlohmann::json operator()(double v) const { return json_number(v); }
    nlohmann::json operator()(int64_t v) const { return v; }
    nlohmann::json operator()(bool v) const { return v; }
    nlohmann::json operator()(const std::vector<int64_t>& s) const { return s; }
  };
  return std::visit(Visitor{}, cell);
}

std::string utc_stamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d%H%M%S", &tm);
  return buf;
}

// " reason (n), reason (n)", in the map's order.
template <typename Counts>
std::string counted(const Counts& counts) {
  std::string text;
  for (const auto& [reason, count] : counts)
    text += std::string(text.empty() ? " " : ", ") + reason + " (" + std::to_string(count) + ")";
  return text;
}

}  // namespace

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // shortest round-trip digits: "d.ddde±XX"
  const size_t e_pos = sci.find('e');
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string mantissa = sci.substr(0, e_pos);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char ch : mantissa)
    if (ch != '.') digits += ch;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_buf;
  }
  if (exponent < 0) return out + "0." + std::string(-exponent - 1, '0') + digits;
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> c = kMsitColumns;
    c.insert(c.end(), kExtraColumns.begin(), kExtraColumns.end());
    return c;
  }();
  return all;
}

namespace {

// Creates `base + ext`, or base_1, base_2... if taken; O_EXCL so two runs never share a file.
std::string create_unique(const std::string& base, const std::string& ext, int* fd_out) {
  for (int n = 0; n < 10000; ++n) {
    std::string path = base + (n ? "_" + std::to_string(n) : "") + ext;
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *fd_out = fd;
      return path;
    }
    if (errno != EEXIST) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  }
  throw std::runtime_error("too many files named " + base + "*" + ext);
}

void write_all(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace

std::string write_unique_file(const std::string& out_dir, const std::string& stem, const std::string& ext,
                              const std::string& text) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + out_dir + ": " + ec.message());
  int fd;
  const std::string path = create_unique(out_dir + "/" + stem + "_" + utc_stamp(), ext, &fd);
  write_all(fd, text, path);
  return path;
}

std::vector<std::string> write_csv_reports(const CompareResult& result, const std::string& out_dir) {
  std::vector<std::string> paths;
  for (const RowGroup& group : result.groups) {
    std::string stem = "diagnose_cmp_report";
    if (group.rank >= 0) stem += "_rank" + std::to_string(group.rank);
    if (group.graph >= 0) stem += "_graph" + std::to_string(group.graph);
    std::string text;
    for (size_t i = 0; i < csv_columns().size(); ++i) text += (i ? "," : "") + csv_columns()[i];
    text += "\n";
    for (const Row& row : group.rows) {
      bool first = true;
      for (const auto& [name, cell] : row_cells(row)) {
        text += (first ? "" : ",") + csv_text(cell);
        first = false;
      }
      text += "\n";
    }
    paths.push_back(write_unique_file(out_dir, stem, ".csv", text));
  }
  return paths;
}

nlohmann::json result_to_json(const CompareResult& result, const CompareOptions& options,
                              const std::vector<std::string>& csv_paths) {
  nlohmann::json j;
  j["format"] = "diagnose-compare-result";
  j["version"] = 1;
  j["golden"] = {
      {"path", options.golden_path}, {"kind", dump_kind_name(result.golden_kind)}, {"detail", result.golden_detail}};
  j["mine"] = {{"path", options.my_path}, {"kind", dump_kind_name(result.my_kind)}, {"detail", result.my_detail}};
  j["referee"] = options.referee_path ? nlohmann::json({{"path", *options.referee_path}}) : nlohmann::json();
  const CompareSummary& s = result.summary;
  nlohmann::json summary = {{"rows", s.rows},
                            {"compared", s.compared},
                            {"passed", s.passed},
                            {"failed", s.failed},
                            {"not_comparable", s.not_comparable},
                            {"not_comparable_reasons", s.not_comparable_reasons},
                            {"not_judged", s.not_judged},
                            {"judged_by", s.judged_by},
                            {"unmatched_count", s.unmatched.size()},
                            {"coverage", coverage_text(s)}};
  summary["divergences"] = nlohmann::json::array();
  for (const Divergence& d : s.divergences) {
    summary["divergences"].push_back(
        {{"rank", d.rank},
         {"graph", d.graph},
         {"token_id", d.token_id},
         {"first_failing_data_id",
          d.first_failing_data_id ? nlohmann::json(*d.first_failing_data_id) : nlohmann::json()},
         {"first_failing_op", d.first_failing_op},
         {"source_ops", d.source_ops}});
  }
  summary["unmatched"] = nlohmann::json::array();
  for (const auto& [name, reason] : s.unmatched) summary["unmatched"].push_back({{"name", name}, {"reason", reason}});
  summary["warnings"] = s.warnings;
  if (!result.fatal_error.empty()) summary["error"] = result.fatal_error;
  j["summary"] = summary;
  j["groups"] = nlohmann::json::array();
  for (size_t g = 0; g < result.groups.size(); ++g) {
    const RowGroup& group = result.groups[g];
    nlohmann::json rows = nlohmann::json::array();
    for (const Row& row : group.rows) {
      nlohmann::json r;
      for (const auto& [name, cell] : row_cells(row)) r[name] = json_value(cell);
      r["reasons"] = row.reasons;
      r["graph_step"] = row.spec.graph_step ? nlohmann::json(*row.spec.graph_step) : nlohmann::json();
      r["cosine_unrounded"] =
          row.metrics && row.metrics_valid ? json_number(row.metrics->cosine_unrounded) : nlohmann::json();
      rows.push_back(std::move(r));
    }
    j["groups"].push_back({{"rank", group.rank},
                           {"graph", group.graph},
                           {"csv", g < csv_paths.size() ? nlohmann::json(csv_paths[g]) : nlohmann::json()},
                           {"rows", std::move(rows)}});
  }
  j["exit_code"] = exit_code_for(result);
  return j;
}

std::string coverage_text(const CompareSummary& s) {
  std::string text = "judged " + std::to_string(s.compared) + " of " + std::to_string(s.rows) + " rows";
  if (s.not_judged > 0) text += "; " + std::to_string(s.not_judged) + " " + kUninitializedMemory;
  if (s.not_comparable > 0)
    text += "; " + std::to_string(s.not_comparable) + " not comparable:" + counted(s.not_comparable_reasons);
  if (!s.unmatched.empty()) {
    std::map<std::string, size_t> by_reason;
    for (const auto& [name, reason] : s.unmatched) ++by_reason[reason];
    text += "; " + std::to_string(s.unmatched.size()) + " record(s) of one side unmatched:" + counted(by_reason);
  }
  return text;
}

void print_summary(const CompareResult& result, std::ostream& out) {
  const CompareSummary& s = result.summary;
  out << "golden: " << dump_kind_name(result.golden_kind) << " (" << result.golden_detail << ")\n"
      << "mine:   " << dump_kind_name(result.my_kind) << " (" << result.my_detail << ")\n";
  if (!result.fatal_error.empty()) {
    out << "error: " << result.fatal_error << "\n";
    return;
  }
  out << s.rows << " rows: " << s.passed << " pass, " << s.failed << " fail, " << s.not_comparable
      << " not comparable\n"
      << coverage_text(s) << "\n";
  for (const auto& w : s.warnings) out << "warning: " << w << "\n";
  for (const Divergence& d : s.divergences) {
    out << "first divergence";
    if (d.rank >= 0) out << " rank " << d.rank;
    if (d.graph >= 0) out << " graph " << d.graph;
    out << " token " << d.token_id << ": " << d.first_failing_op << " (data_id " << d.first_failing_data_id.value_or(-1)
        << ")\n";
    if (!d.source_ops.empty()) {
      out << "  source ops:";
      for (const auto& op : d.source_ops) out << " " << op;
      out << "\n";
    }
  }
  std::vector<const Row*> failing;
  for (const RowGroup& g : result.groups)
    for (const Row& r : g.rows)
      if (r.verdict == Verdict::Fail) failing.push_back(&r);
  const auto badness = [](const Row* r) {
    return r->metrics && r->metrics_valid ? r->metrics->relative_euclidean_distance : INFINITY;
  };
  std::stable_sort(failing.begin(), failing.end(), [&](const Row* a, const Row* b) { return badness(a) > badness(b); });
  if (!failing.empty()) out << "worst rows:\n";
  for (size_t i = 0; i < failing.size() && i < 5; ++i) {
    const Row& r = *failing[i];
    out << "  " << r.spec.op_key << (r.spec.direction == Direction::Input ? " input " : " output ") << r.spec.index;
    if (r.metrics && r.metrics_valid)
      out << ": cosine " << python_float_repr(r.metrics->cosine_similarity) << ", relative L2 "
          << python_float_repr(r.metrics->relative_euclidean_distance) << ", max abs "
          << python_float_repr(r.metrics->max_absolute_error);
    else
      out << ": " << reason_text(r);
    out << "\n";
  }
}

}  // namespace diagnose::compare
