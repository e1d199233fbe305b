#include "compare/compare.h"
#include "compare/text.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "compare/divergence.h"
#include "compare/evaluate.h"
#include "compare/fx_dump.h"
#include "compare/ge_match.h"
#include "compare/match.h"
#include "compare/npy.h"

namespace diagnose::compare {

namespace fs = std::filesystem;

namespace {

// Counts .npy files below `dir` (stopping early at `limit`), without following symlinks.
size_t count_npy(const fs::path& dir, size_t limit) {
  size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && n < limit; it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".npy") ++n;
  }
  return n;
}

bool is_manifest_dir(const fs::path& dir, std::string* detail) {
  std::error_code ec;
  if (fs::is_regular_file(dir / "manifest.jsonl", ec)) {
    *detail = "manifest.jsonl";
    return true;
  }
  std::vector<std::string> ranks;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (starts_with(name, "rank") && fs::is_regular_file(it->path() / "manifest.jsonl", ec)) ranks.push_back(name);
  }
  if (ranks.empty()) return false;
  std::sort(ranks.begin(), ranks.end());
  *detail = std::to_string(ranks.size()) + " rank dump(s)";
  return true;
}

bool looks_like_npy(const fs::path& file) { return file.extension() == ".npy"; }

}  // namespace

std::string dump_kind_name(DumpKind k) {
  switch (k) {
    case DumpKind::GeDump: return "ge_dump";
    case DumpKind::FxNpyDump: return "fx_npy_dump";
    case DumpKind::Manifest: return "diagnose_dump";
    case DumpKind::NpyDirectory: return "npy_directory";
    case DumpKind::NpyFile: return "npy_file";
    case DumpKind::GeDumpFile: return "ge_dump_file";
    case DumpKind::Unknown: return "unknown";
  }
  return "unknown";
}

DumpKind detect_dump_kind(const std::string& path, std::string* detail) {
  std::error_code ec;
  const fs::path p(path);
  const auto status = fs::status(p, ec);
  if (ec || !fs::exists(status)) {
    *detail = "does not exist or cannot be read";
    return DumpKind::Unknown;
  }
  if (fs::is_regular_file(status)) {
    if (looks_like_npy(p)) {
      *detail = "single .npy file";
      return DumpKind::NpyFile;
    }
    *detail = "single GE dump file";
    return DumpKind::GeDumpFile;
  }
  if (!fs::is_directory(status)) {
    *detail = "neither a file nor a directory";
    return DumpKind::Unknown;
  }
  if (is_manifest_dir(p, detail)) return DumpKind::Manifest;
  if (is_ge_dump(path, detail)) return DumpKind::GeDump;
  if (is_fx_dump(path, detail)) return DumpKind::FxNpyDump;
  const size_t npy = count_npy(p, 1000000);
  if (npy > 0) {
    *detail = std::to_string(npy) + " .npy file(s)";
    return DumpKind::NpyDirectory;
  }
  *detail = "no dump found (no manifest.jsonl, graph txt, FX dump or .npy files)";
  return DumpKind::Unknown;
}

CompareResult run_compare(const CompareOptions& options) {
  CompareResult result;
  result.golden_kind = detect_dump_kind(options.golden_path, &result.golden_detail);
  result.my_kind = detect_dump_kind(options.my_path, &result.my_detail);
  if (result.golden_kind == DumpKind::Unknown || result.my_kind == DumpKind::Unknown) {
    const bool golden_bad = result.golden_kind == DumpKind::Unknown;
    result.fatal_error = (golden_bad ? "golden path " + options.golden_path + ": " + result.golden_detail
                                     : "my path " + options.my_path + ": " + result.my_detail);
    return result;
  }

  const auto g = result.golden_kind, m = result.my_kind;
  const bool g_file = g == DumpKind::NpyFile || g == DumpKind::GeDumpFile;
  const bool m_file = m == DumpKind::NpyFile || m == DumpKind::GeDumpFile;
  const bool g_npy = g == DumpKind::NpyDirectory || g == DumpKind::FxNpyDump;
  const bool m_npy = m == DumpKind::NpyDirectory || m == DumpKind::FxNpyDump;
  MatchResult match;
  if (m == DumpKind::GeDump && g == DumpKind::GeDump) {
    match = match_ge_vs_ge(options.golden_path, options.my_path, options.rank);
  } else if (m == DumpKind::GeDump && g == DumpKind::FxNpyDump) {
    match = match_ge_vs_fx(options.golden_path, options.my_path, options.rank);
  } else if (g == DumpKind::Manifest && m == DumpKind::Manifest) {
    match = match_manifests(options.golden_path, options.my_path, options.rank);
  } else if (g_npy && m_npy) {
    match = match_npy_dirs(options.golden_path, options.my_path);
  } else if (g_file && m_file) {
    match = match_files(options.golden_path, options.my_path);
  } else {
    result.fatal_error = "cannot compare a " + dump_kind_name(g) + " (golden) with a " + dump_kind_name(m) + " (mine)";
    return result;
  }
  result.summary.unmatched = std::move(match.unmatched);
  result.summary.warnings = std::move(match.warnings);
  if (!match.fatal_error.empty()) {
    result.fatal_error = match.fatal_error;
    return result;
  }
  if (options.referee_path)
    attach_referee(options.golden_path, *options.referee_path, match.rows, result.summary.warnings);

  std::vector<Row> rows = evaluate_rows(std::move(match.rows), options.tolerances, options.threads);

  // Group by (rank, graph), each in execution order.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const auto key = [](const Row& r) {
      return std::make_tuple(r.spec.rank, r.spec.graph, r.spec.token_id, r.spec.order,
                             r.spec.direction == Direction::Output, r.spec.index);
    };
    return key(a) < key(b);
  });
  for (Row& row : rows) {
    if (result.groups.empty() || result.groups.back().rank != row.spec.rank ||
        result.groups.back().graph != row.spec.graph) {
      result.groups.push_back(RowGroup{row.spec.rank, row.spec.graph, {}});
    }
    RowGroup& group = result.groups.back();
    row.data_id = static_cast<int64_t>(group.rows.size());
    group.rows.push_back(std::move(row));
  }

  CompareSummary& s = result.summary;
  for (const RowGroup& group : result.groups) {
    for (const Row& row : group.rows) {
      ++s.rows;
      if (row.verdict == Verdict::NotJudged) {
        ++s.not_judged;
        continue;
      }
      if (row.verdict == Verdict::NotComparable) {
        ++s.not_comparable;
        ++s.not_comparable_reasons[row_reason_kind(row)];
        continue;
      }
      ++s.compared;
      ++s.judged_by[row.judged_by];
      (row.verdict == Verdict::Pass ? s.passed : s.failed)++;
    }
  }
  s.divergences = find_divergences(result.groups);
  return result;
}

std::string row_reason_kind(const Row& row) {
  if (row.reasons.empty()) return "not evaluated";
  std::string kind;
  size_t at = 0;
  const std::string& reason = row.reasons.front();
  while (at < reason.size()) {
    size_t end = reason.find(' ', at);
    if (end == std::string::npos) end = reason.size();
    const std::string word = reason.substr(at, end - at);
    if (word.find('/') == std::string::npos && word.find(".OUTPUT.") == std::string::npos &&
        word.find(".INPUT.") == std::string::npos)
      kind += (kind.empty() ? "" : " ") + word;
    at = end + 1;
  }
  while (!kind.empty() && (kind.back() == ':' || kind.back() == '.')) kind.pop_back();
  return kind.empty() ? reason : kind;
}

int exit_code_for(const CompareResult& result) {
  if (!result.fatal_error.empty()) return 3;
  if (result.summary.compared == 0) return 3;  // nothing could be compared
  return result.summary.failed > 0 ? 1 : 0;
}

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Fail: return "fail";
    case Verdict::NotComparable: return "not_comparable";
    case Verdict::NotJudged: return "not_judged";
  }
  return "not_comparable";
}

}  // namespace diagnose::compare
