#include "compare/fx_dump.h"
#include "compare/text.h"

#include <algorithm>
#include <filesystem>
#include <limits>

namespace diagnose::compare {
namespace {

namespace fs = std::filesystem;

bool parse_number(const std::string& s, int64_t* out, size_t max_digits = 18) {
  if (s.empty() || s.size() > max_digits || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoll(s);
  return true;
}

struct Entry {
  std::string name;
  std::string path;
};

// Subdirectories (symlinks followed: the walks here have a fixed depth), by name.
std::vector<Entry> subdirs(const std::string& dir) {
  std::vector<Entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec)) out.push_back({it->path().filename().string(), it->path().string()});
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

bool has_npy(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".npy") return true;
  return false;
}

std::vector<std::pair<int64_t, Entry>> numeric_subdirs(const std::string& dir) {
  std::vector<std::pair<int64_t, Entry>> out;
  for (auto& e : subdirs(dir)) {
    int64_t n;
    if (parse_number(e.name, &n)) out.emplace_back(n, std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// graph_{N}/{step}/ under `dir`, by N.
std::vector<FxGroup> scan_graph_dirs(const std::string& dir) {
  std::vector<std::pair<int64_t, FxGroup>> groups;
  for (const auto& e : subdirs(dir)) {
    int64_t id;
    if (!starts_with(e.name, "graph_") || !parse_number(e.name.substr(6), &id)) continue;
    FxGroup g;
    g.name = e.name;
    g.graph = id > std::numeric_limits<int>::max() ? -1 : static_cast<int>(id);
    for (const auto& [step, s] : numeric_subdirs(e.path)) g.steps.push_back({step, s.path});
    if (g.steps.empty() && has_npy(e.path)) g.steps.push_back({0, e.path});
    groups.emplace_back(id, std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<FxGroup> out;
  for (auto& [id, g] : groups) out.push_back(std::move(g));
  return out;
}

// {step+1}/gm_{ts}_dump/ under `dir`: the i-th gm directory of every step is graph i.
std::vector<FxGroup> scan_older_layout(const std::string& dir) {
  std::vector<FxGroup> groups;
  for (const auto& [step, s] : numeric_subdirs(dir)) {
    size_t i = 0;
    for (const auto& gm : subdirs(s.path)) {
      if (!starts_with(gm.name, "gm_")) continue;
      if (groups.size() <= i) groups.push_back({"gm #" + std::to_string(i), {}});
      groups[i++].steps.push_back({step - 1, gm.path});
    }
  }
  return groups;
}

bool older_layout_root(const std::string& dir) {
  for (const auto& [step, s] : numeric_subdirs(dir))
    for (const auto& gm : subdirs(s.path))
      if (starts_with(gm.name, "gm_")) return true;
  return false;
}

size_t count_steps(const FxDumpLayout& l) {
  size_t n = 0;
  for (const auto& r : l.ranks)
    for (const auto& g : r.groups) n += g.steps.size();
  return n;
}

}  // namespace

std::optional<int> rank_of_dir_name(const std::string& name) {
  if (!starts_with(name, "worldsize")) return std::nullopt;
  const size_t pos = name.find("_global_rank");
  int64_t world, rank;
  if (pos == std::string::npos || !parse_number(name.substr(9, pos - 9), &world, 9) ||
      !parse_number(name.substr(pos + 12), &rank, 9)) {
    return std::nullopt;
  }
  return static_cast<int>(rank);
}

std::optional<FxFileName> parse_fx_file_name(const std::string& file_name) {
  if (file_name.size() <= 4 || file_name.compare(file_name.size() - 4, 4, ".npy") != 0) return std::nullopt;
  const std::string stem = file_name.substr(0, file_name.size() - 4);
  const size_t in_pos = stem.rfind(".INPUT.");
  const size_t out_pos = stem.rfind(".OUTPUT.");
  FxFileName f;
  size_t pos, marker;
  if (in_pos != std::string::npos && (out_pos == std::string::npos || in_pos > out_pos)) {
    f.input = true;
    pos = in_pos;
    marker = 7;
  } else if (out_pos != std::string::npos) {
    pos = out_pos;
    marker = 8;
  } else {
    return std::nullopt;
  }
  if (pos == 0) return std::nullopt;
  f.prefix = stem.substr(0, pos);
  const size_t dash = f.prefix.find('-');
  f.node = f.prefix.substr(0, dash);
  f.target = dash == std::string::npos ? "" : f.prefix.substr(dash + 1);

  std::vector<std::string> rest;
  for (size_t start = pos + marker;;) {
    const size_t dot = stem.find('.', start);
    rest.push_back(stem.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  const size_t expected_max = f.input ? 3 : 2;
  if (rest.size() < 2 || rest.size() > expected_max) return std::nullopt;
  int64_t index, item = -1;
  const std::string& ts = rest.back();  // 20 digits, beyond int64: kept as text
  if (!parse_number(rest[0], &index, 9) || ts.empty() || ts.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  if (rest.size() == 3 && !parse_number(rest[1], &item, 9)) return std::nullopt;
  f.index = static_cast<int>(index);
  f.item = static_cast<int>(item);
  f.timestamp = ts;
  return f;
}

std::map<std::string, FxNode> index_fx_step(const std::string& dir, std::vector<std::string>* warnings) {
  // prefix -> timestamp -> node
  std::map<std::string, std::map<std::string, FxNode>> calls;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    const auto name = parse_fx_file_name(it->path().filename().string());
    if (!name) continue;
    FxNode& node = calls[name->prefix][name->timestamp];
    node.prefix = name->prefix;
    node.target = name->target;
    node.timestamp = name->timestamp;
    (name->input ? node.inputs : node.outputs).push_back({name->index, name->item, it->path().string()});
  }
  if (ec && warnings) warnings->push_back(dir + ": cannot list directory: " + ec.message());
  std::map<std::string, FxNode> out;
  for (auto& [prefix, by_ts] : calls) {
    // Timestamps are fixed-width digit strings, so the map's first is the earliest.
    if (by_ts.size() > 1 && warnings) {
      warnings->push_back(dir + ": FX node " + prefix + " was dumped " + std::to_string(by_ts.size()) +
                          " times; using the first call (" + by_ts.begin()->first + ")");
    }
    FxNode node = std::move(by_ts.begin()->second);
    const auto by_position = [](const FxTensorFile& a, const FxTensorFile& b) {
      return a.index != b.index ? a.index < b.index : a.item < b.item;
    };
    std::sort(node.inputs.begin(), node.inputs.end(), by_position);
    std::sort(node.outputs.begin(), node.outputs.end(), by_position);
    out.emplace(prefix, std::move(node));
  }
  return out;
}

FxDumpLayout scan_fx_dump(const std::string& path) {
  FxDumpLayout l;
  std::vector<std::pair<int, Entry>> rank_dirs;
  for (auto& e : subdirs(path))
    if (const auto r = rank_of_dir_name(e.name)) rank_dirs.emplace_back(*r, std::move(e));
  std::sort(rank_dirs.begin(), rank_dirs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [rank, e] : rank_dirs) {
    if (!l.ranks.empty() && l.ranks.back().rank == rank) {
      l.warnings.push_back("two directories for rank " + std::to_string(rank) + "; using " + l.ranks.back().path);
      continue;
    }
    l.ranks.push_back({rank, e.path, scan_graph_dirs(e.path)});
  }
  if (!l.ranks.empty()) return l;
  // A run's dump directory as get_fx_dump_config(dump_path=...) fills it: {dump_path}/fx_dump/...
  std::error_code ec;
  if (fs::is_directory(path + "/fx_dump", ec)) return scan_fx_dump(path + "/fx_dump");

  auto groups = scan_graph_dirs(path);
  if (!groups.empty()) {
    l.ranks.push_back({-1, path, std::move(groups)});
    return l;
  }
  for (const std::string& root : {path + "/data_dump", path}) {
    if (older_layout_root(root)) {
      l.older_layout = true;
      l.ranks.push_back({-1, root, scan_older_layout(root)});
      return l;
    }
  }
  if (has_npy(path)) l.ranks.push_back({-1, path, {FxGroup{"npy directory", {TokenDir{0, path}}}}});
  return l;
}

bool is_fx_dump(const std::string& path, std::string* detail) {
  const FxDumpLayout l = scan_fx_dump(path);
  const size_t steps = count_steps(l);
  if (steps == 0) return false;
  // A bare directory of npy files is an FX dump only if its names follow the FX pattern.
  if (!l.older_layout && l.ranks.size() == 1 && l.ranks[0].rank == -1 && l.ranks[0].groups.size() == 1 &&
      l.ranks[0].groups[0].name == "npy directory" && index_fx_step(path, nullptr).empty()) {
    return false;
  }
  size_t groups = 0;
  for (const auto& r : l.ranks) groups += r.groups.size();
  if (detail) {
    *detail = std::string(l.older_layout ? "older data_dump/{step}/gm_*_dump layout" : "current layout") + ", " +
              (l.ranks[0].rank >= 0 ? std::to_string(l.ranks.size()) + " rank(s), " : "") + std::to_string(groups) +
              " graph(s), " + std::to_string(steps) + " step dir(s)";
  }
  return true;
}

}  // namespace diagnose::compare
