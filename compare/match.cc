// Matchers for the layouts that are not TorchAir-specific (see ge_match.cc for those).
#include "compare/match.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "compare/ge_dump.h"
#include "compare/manifest.h"
#include "compare/npy.h"
#include "compare/uninitialized_ops.h"

namespace diagnose::compare {

namespace fs = std::filesystem;

namespace {

// Identity of a file in an npy directory: its relative path without ".npy" and
// without a trailing call timestamp (TorchAir FX dumps add one per call).
struct NpyKey {
  std::string key;
  std::string op_key;
  Direction direction = Direction::Output;
  int index = 0;
  int64_t timestamp = 0;
};

NpyKey npy_key(const std::string& relative) {
  static const std::regex timestamped("(.*)\\.(\\d{14,20})");
  static const std::regex io_name("(.*)\\.(INPUT|OUTPUT)\\.(\\d+)(\\.\\d+)?");
  NpyKey k;
  k.key = relative.substr(0, relative.size() - 4);
  std::smatch m;
  if (std::regex_match(k.key, m, timestamped)) {
    const std::string stem = m[1];  // copied first: m refers into k.key
    k.timestamp = std::stoll(m[2].str().substr(0, 18));
    k.key = stem;
  }
  if (std::regex_match(k.key, m, io_name)) {
    k.op_key = m[1];
    k.direction = m[2] == "INPUT" ? Direction::Input : Direction::Output;
    k.index = std::stoi(m[3]);
  } else {
    k.op_key = k.key;
  }
  return k;
}

struct NpyEntry {
  NpyKey key;
  std::string path;
};

// All .npy files below `dir` by key; symlinks are not followed, loops cannot hang.
std::map<std::string, NpyEntry> scan_npy(const std::string& dir, std::vector<std::string>& warnings) {
  std::map<std::string, NpyEntry> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) warnings.push_back("cannot list " + dir + ": " + ec.message());
  for (; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".npy") continue;
    if (it->is_symlink(ec) && !fs::exists(it->path(), ec)) {
      warnings.push_back(it->path().string() + ": broken or looping symlink skipped");
      continue;
    }
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    NpyEntry e{npy_key(rel), it->path().string()};
    auto [slot, fresh] = out.try_emplace(e.key.key, e);
    if (!fresh) {
      warnings.push_back("duplicate tensor " + e.key.key + ": kept the latest call");
      if (e.key.timestamp >= slot->second.key.timestamp) slot->second = e;
    }
  }
  if (ec) warnings.push_back("listing " + dir + " stopped: " + ec.message());
  return out;
}

std::string op_call_key(const ManifestRecord& r) {
  return std::to_string(r.graph) + "/" + std::to_string(r.step) + "/" + r.op_key;
}

// RMS of each op call's largest floating input, from the recorded statistics.
std::map<std::string, double> input_scales(const Manifest& dump) {
  std::map<std::string, double> scales;
  for (const ManifestRecord& r : dump.records) {
    const std::optional<RecordedStats> stats = recorded_stats(r);
    const uint64_t n = element_count(r.shape);
    if (r.io != "input" || !is_floating(dtype_from_name(r.dtype)) || !stats || !stats->l2 || n == 0) continue;
    double& scale = scales[op_call_key(r)];
    scale = std::max(scale, *stats->l2 / std::sqrt(static_cast<double>(n)));
  }
  return scales;
}

void match_one_manifest(const Manifest& golden, const Manifest& mine, int rank, MatchResult& out) {
  const std::map<std::string, double> scales = input_scales(golden);
  const std::set<std::string> uninitialized = uninitialized_inputs(golden);
  std::map<std::string, const ManifestRecord*> golden_by_id;
  // The golden final outputs by position, for a target output on the other side of paths (a
  // dump written before final outputs had paths): positional key -> match key.
  std::map<std::string, std::string> golden_finals_by_position;
  for (const auto& r : golden.records) {
    auto [it, fresh] = golden_by_id.try_emplace(r.match_key(), &r);
    if (!fresh) out.warnings.push_back(golden.dir + ": duplicate tensor " + r.match_key() + ", first kept");
    if (fresh && r.kind == "final") golden_finals_by_position.emplace(r.positional_match_key(), r.match_key());
  }
  // Only one side has paths: the golden record at the target's position, if it has none either.
  const auto by_position = [&](const ManifestRecord& r) {
    auto key = golden_finals_by_position.find(r.positional_match_key());
    if (r.kind != "final" || key == golden_finals_by_position.end()) return golden_by_id.end();
    auto g = golden_by_id.find(key->second);
    return g != golden_by_id.end() && g->second->path.empty() != r.path.empty() ? g : golden_by_id.end();
  };
  const bool golden_records_state = std::any_of(golden.records.begin(), golden.records.end(),
                                                [](const ManifestRecord& r) { return r.kind == "state"; });
  std::map<std::string, bool> used;
  for (const auto& r : mine.records) {
    const std::string id = r.match_key();
    if (used[id]) {
      out.warnings.push_back(mine.dir + ": duplicate tensor " + id + ", first kept");
      continue;
    }
    used[id] = true;
    RowSpec s;
    s.rank = rank;
    s.graph = r.graph;
    s.token_id = r.step;
    s.op_key = r.name();
    s.direction = r.io == "input" ? Direction::Input : Direction::Output;
    s.index = r.index;
    s.order = r.seq;
    s.final_output = r.kind == "final";
    s.state = r.kind == "state";
    s.my_op_type = r.op;
    s.fx_nodes = r.fx_nodes;
    s.sources = r.sources;
    s.graph_nodes = r.graph_nodes;
    s.mine = manifest_tensor(mine, r);
    s.my_path = r.file.empty() ? mine.dir + "/manifest.jsonl#" + id : s.mine->path;
    auto g = golden_by_id.find(id);
    if (g == golden_by_id.end()) g = by_position(r);
    if (g == golden_by_id.end() && r.kind == "state") {  // no row: nothing to judge it against
      out.unmatched.emplace_back(id, golden_records_state ? kStateOnlyInTarget : kGoldenRecordsNoState);
      continue;
    }
    if (g == golden_by_id.end()) {
      s.match_note = "no golden tensor " + id;
    } else {
      s.golden = manifest_tensor(golden, *g->second);
      s.golden_key = g->first;
      s.referee = manifest_truth(golden, *g->second);
      s.precision = dtype_from_name(g->second->precision);
      if (auto scale = scales.find(op_call_key(*g->second)); scale != scales.end()) s.input_scale = scale->second;
      if (r.file.empty() || g->second->file.empty()) {  // compared on statistics
        s.golden_recorded = recorded_stats(*g->second);
        s.my_recorded = recorded_stats(r);
        s.over_budget = r.not_kept == "budget" || g->second->not_kept == "budget";
      }
      s.golden_path = g->second->file.empty() ? golden.dir + "/manifest.jsonl#" + id : s.golden->path;
      s.golden_op_type = g->second->op;
      s.golden_value_of = g->second->value_of;
      s.golden_reads_uninitialized = uninitialized.count(g->first) > 0;
      if (r.fx_nodes.empty()) {
        s.fx_nodes = g->second->fx_nodes;
        s.sources = g->second->sources;
      }
      golden_by_id.erase(g);
    }
    out.rows.push_back(std::move(s));
  }
  // Why a golden record has no partner, when the target's dump says: it records no inputs, or
  // the record's FX node was fused into a buffer of another node and never materialised.
  bool target_has_inputs = false;
  std::set<std::string> fused;
  for (const ManifestRecord& r : mine.records) {
    target_has_inputs = target_has_inputs || r.io == "input";
    for (const std::string& node : r.fx_nodes) fused.insert(std::to_string(r.graph) + "/" + node);
  }
  for (const auto& [id, record] : golden_by_id) {
    std::string reason = "only in the golden dump";
    if (record->kind == "state")
      reason = kStateOnlyInGolden;
    else if (record->io == "input" && !target_has_inputs)
      reason = "an input; the target dump records outputs only";
    else if (!record->fx_nodes.empty() && fused.count(std::to_string(record->graph) + "/" + record->fx_nodes.front()))
      reason = "fused into another node's buffer; never materialised";
    out.unmatched.emplace_back(id, reason);
  }
}

// A row of two files compared as they are (no dump layout), named after the target file.
RowSpec file_row(const std::string& my_file, const std::string& golden_label, std::optional<TensorRef> golden,
                 const std::string& my_label, std::optional<TensorRef> mine, Direction direction, int index) {
  RowSpec s;
  s.op_key = fs::path(my_file).filename().string();
  s.direction = direction;
  s.index = index;
  s.golden_path = golden_label;
  s.my_path = my_label;
  s.golden = std::move(golden);
  s.mine = std::move(mine);
  return s;
}

}  // namespace

std::map<int, std::string> manifest_ranks(const std::string& dir) {
  std::map<int, std::string> ranks;
  std::error_code ec;
  if (fs::is_regular_file(fs::path(dir) / "manifest.jsonl", ec)) {
    ranks[-1] = dir;
    return ranks;
  }
  static const std::regex rank_dir("rank(\\d{1,9})");  // std::stoi cannot throw
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, m, rank_dir) && fs::is_regular_file(it->path() / "manifest.jsonl", ec))
      ranks[std::stoi(m[1])] = it->path().string();
  }
  return ranks;
}

MatchResult match_npy_dirs(const std::string& golden_dir, const std::string& my_dir) {
  MatchResult out;
  auto golden = scan_npy(golden_dir, out.warnings);
  auto mine = scan_npy(my_dir, out.warnings);
  std::vector<const NpyEntry*> ordered;
  for (const auto& [key, e] : mine) ordered.push_back(&e);
  // Execution order: call timestamps when the files have them, else names.
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const NpyEntry* a, const NpyEntry* b) { return a->key.timestamp < b->key.timestamp; });
  int64_t order = 0;
  for (const NpyEntry* e : ordered) {
    RowSpec s;
    s.op_key = e->key.op_key;
    s.direction = e->key.direction;
    s.index = e->key.index;
    s.order = order++;
    s.my_path = e->path;
    s.mine = read_npy(e->path);
    auto g = golden.find(e->key.key);
    if (g == golden.end()) {
      s.match_note = "no golden file for " + e->key.key;
    } else {
      s.golden_path = g->second.path;
      s.golden = read_npy(g->second.path);
      golden.erase(g);
    }
    out.rows.push_back(std::move(s));
  }
  for (const auto& [key, e] : golden) out.unmatched.emplace_back(key, "only in golden directory");
  if (mine.empty() && golden.empty()) out.fatal_error = "no .npy files on either side";
  return out;
}

MatchResult match_manifests(const std::string& golden_dir, const std::string& my_dir, std::optional<int> rank) {
  MatchResult out;
  auto golden_ranks = manifest_ranks(golden_dir);
  auto my_ranks = manifest_ranks(my_dir);
  // A single dump on both sides compares as one, whatever rank it says it is.
  if (golden_ranks.size() == 1 && my_ranks.size() == 1 && golden_ranks.count(-1) + my_ranks.count(-1) > 0) {
    golden_ranks = {{-1, golden_ranks.begin()->second}};
    my_ranks = {{-1, my_ranks.begin()->second}};
  }
  for (const auto& [r, dir] : my_ranks) {
    if (rank && r != *rank && r != -1) continue;
    auto g = golden_ranks.find(r);
    if (g == golden_ranks.end()) {
      out.unmatched.emplace_back("rank" + std::to_string(r), "rank only in my dump");
      continue;
    }
    Manifest golden = read_manifest(g->second);
    Manifest mine = read_manifest(dir);
    for (const Manifest* m : {&golden, &mine}) {
      out.warnings.insert(out.warnings.end(), m->warnings.begin(), m->warnings.end());
      if (!m->error.empty()) out.warnings.push_back(m->error);
    }
    if (!golden.error.empty() || !mine.error.empty()) continue;
    match_one_manifest(golden, mine, r, out);
  }
  if (out.rows.empty() && out.fatal_error.empty()) {
    out.fatal_error = "nothing to compare between " + golden_dir + " and " + my_dir;
    for (const auto& w : out.warnings) out.fatal_error += "\n  " + w;
  }
  return out;
}

MatchResult match_files(const std::string& golden_file, const std::string& my_file) {
  MatchResult out;
  const bool golden_npy = fs::path(golden_file).extension() == ".npy";
  const bool my_npy = fs::path(my_file).extension() == ".npy";
  if (golden_npy && my_npy) {
    out.rows.push_back(
        file_row(my_file, golden_file, read_npy(golden_file), my_file, read_npy(my_file), Direction::Output, 0));
    return out;
  }
  GeDump mine = my_npy ? GeDump{} : read_ge_dump(my_file);
  GeDump golden = golden_npy ? GeDump{} : read_ge_dump(golden_file);
  for (const GeDump* d : {&golden, &mine}) {
    if (!d->path.empty() && !d->ok()) out.fatal_error = d->path + ": " + d->error;
    out.warnings.insert(out.warnings.end(), d->warnings.begin(), d->warnings.end());
  }
  if (!out.fatal_error.empty()) return out;
  if (golden_npy || my_npy) {
    // An npy against a GE dump: the npy stands for the GE op's only output.
    const GeDump& ge = golden_npy ? mine : golden;
    if (ge.outputs.size() != 1) {
      out.fatal_error = ge.path + " has " + std::to_string(ge.outputs.size()) +
                        " outputs; an .npy can only be compared with a single-output GE dump";
      return out;
    }
    const std::string ge_label = ge.path + ",outputs,0";
    out.rows.push_back(
        golden_npy
            ? file_row(ge_label, golden_file, read_npy(golden_file), ge_label, ge.outputs[0], Direction::Output, 0)
            : file_row(my_file, ge_label, ge.outputs[0], my_file, read_npy(my_file), Direction::Output, 0));
    (golden_npy ? out.rows.back().my_recorded : out.rows.back().golden_recorded) = ge.recorded(Direction::Output, 0);
    return out;
  }
  for (auto [direction, g, m, label] :
       {std::make_tuple(Direction::Input, &golden.inputs, &mine.inputs, "inputs"),
        std::make_tuple(Direction::Output, &golden.outputs, &mine.outputs, "outputs")}) {
    const size_t n = std::max(g->size(), m->size());
    for (size_t i = 0; i < n; ++i) {
      const std::string suffix = std::string(",") + label + "," + std::to_string(i);
      RowSpec s = file_row(my_file, golden_file + suffix, i < g->size() ? std::optional((*g)[i]) : std::nullopt,
                           my_file + suffix, i < m->size() ? std::optional((*m)[i]) : std::nullopt, direction,
                           static_cast<int>(i));
      s.golden_recorded = golden.recorded(direction, i);
      s.my_recorded = mine.recorded(direction, i);
      if (g->size() != m->size())
        s.match_note = std::string(label) + " count differs: golden has " + std::to_string(g->size()) + ", mine has " +
                       std::to_string(m->size());
      out.rows.push_back(std::move(s));
    }
  }
  return out;
}

namespace {

// Manifest dumps: each golden record's counterpart in the referee dump is the record with the
// same identity (op_key, io, index or a final output's path, graph, step), wherever the float64
// run wrote its file, so ops the float64 run adds or drops shift nothing.
void attach_manifest_referee(const std::string& referee_root, std::vector<RowSpec>& rows, size_t* missing,
                             std::vector<std::string>& warnings) {
  const std::map<int, std::string> referee_ranks = manifest_ranks(referee_root);
  std::map<int, Manifest> referees;  // read when a row of that rank first needs it
  std::map<int, std::map<std::string, const ManifestRecord*>> by_key;
  for (RowSpec& row : rows) {
    if (!row.golden || row.golden_key.empty()) continue;
    if (row.golden_recorded) {  // compared on statistics: a referee would not be read
      ++*missing;
      continue;
    }
    auto dir = referee_ranks.find(row.rank);
    if (dir == referee_ranks.end() && referee_ranks.size() == 1) dir = referee_ranks.begin();
    if (dir == referee_ranks.end()) {
      ++*missing;
      continue;
    }
    auto [manifest, fresh] = referees.try_emplace(dir->first);
    if (fresh) {
      manifest->second = read_manifest(dir->second);
      if (!manifest->second.error.empty()) warnings.push_back("referee: " + manifest->second.error);
      for (const ManifestRecord& record : manifest->second.records) {
        by_key[dir->first].emplace(record.match_key(), &record);
        // a golden dump written before final outputs had paths names them by position
        if (record.kind == "final") by_key[dir->first].emplace(record.positional_match_key(), &record);
      }
    }
    const auto& records = by_key[dir->first];
    auto found = records.find(row.golden_key);
    TensorRef ref = found == records.end() ? TensorRef{} : manifest_tensor(manifest->second, *found->second);
    if (found == records.end() || !ref.ok()) {
      ++*missing;
      continue;
    }
    row.referee = ref;
  }
}

}  // namespace

void attach_referee(const std::string& golden_root, const std::string& referee_root, std::vector<RowSpec>& rows,
                    std::vector<std::string>& warnings) {
  std::error_code ec;
  size_t missing = 0;
  if (!manifest_ranks(golden_root).empty()) {
    attach_manifest_referee(referee_root, rows, &missing, warnings);
  } else {
    const bool single_file = fs::is_regular_file(golden_root, ec);
    for (RowSpec& row : rows) {
      if (!row.golden || row.golden->path.size() < 4 ||
          row.golden->path.compare(row.golden->path.size() - 4, 4, ".npy") != 0)
        continue;
      const fs::path referee = single_file ? fs::path(referee_root)
                                           : fs::path(referee_root) / fs::relative(row.golden->path, golden_root, ec);
      TensorRef ref = read_npy(referee.string());
      if (!ref.ok()) {
        ++missing;
        continue;
      }
      row.referee = ref;
    }
  }
  if (missing > 0)
    warnings.push_back(std::to_string(missing) + " golden tensor(s) have no readable counterpart in the referee " +
                       referee_root + "; judged without the referee");
}

}  // namespace diagnose::compare
