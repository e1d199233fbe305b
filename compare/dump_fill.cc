#include "compare/dump_fill.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compare/json_field.h"
#include "compare/manifest.h"

namespace diagnose::compare {

namespace fs = std::filesystem;

namespace {

// The fields of a record that name tensor files (the value and its float64 truth).
const std::pair<const char*, std::string ManifestRecord::*> kFileFields[] = {
    {"file", &ManifestRecord::file},
    {"truth_delta_file", &ManifestRecord::truth_delta_file},
    {"truth_file", &ManifestRecord::truth_file}};

// `from` (in the source dump) as `to` (in the filled dump): a hard link, else a copy.
bool place_file(const fs::path& from, const fs::path& to) {
  std::error_code error;
  fs::create_directories(to.parent_path(), error);
  if (fs::exists(to, error)) return true;  // placed for an earlier record of equal contents
  fs::create_hard_link(from, to, error);
  if (!error) return true;
  return fs::copy_file(from, to, error) && !error;
}

// Fills one manifest directory (one rank) from the matching one of the source dump.
void fill_manifest(const std::string& dir, const std::string& source_dir, const std::set<std::string>& op_keys,
                   const std::string& label, DumpFill& outcome) {
  Manifest source = read_manifest(source_dir);
  if (!source.error.empty()) {
    outcome.error = source.error;
    return;
  }
  std::map<std::string, const ManifestRecord*> by_key;
  for (const ManifestRecord& record : source.records)
    if (!record.file.empty()) by_key.emplace(record.match_key(), &record);

  const fs::path manifest_path = fs::path(dir) / "manifest.jsonl";
  std::ifstream in(manifest_path);
  if (!in) {
    outcome.error = "cannot read " + manifest_path.string();
    return;
  }
  std::ostringstream rewritten;
  DumpFill counts;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    std::string why;
    std::optional<ManifestRecord> record;
    if (j.is_object() && string_at(j, "type") == "tensor") record = tensor_record(j, &why);
    if (!record || record->not_kept != "budget" || !op_keys.count(record->op_key)) {
      rewritten << line << '\n';
      continue;
    }
    auto found = by_key.find(record->match_key());
    if (found == by_key.end()) {
      ++counts.missing;
      rewritten << line << '\n';
      continue;
    }
    const ManifestRecord& kept = *found->second;
    const std::string hash = string_at(record->stats, "hash");
    if (hash.empty() || hash != string_at(kept.stats, "hash") || kept.dtype != record->dtype ||
        kept.shape != record->shape) {
      ++counts.differed;
      rewritten << line << '\n';
      continue;
    }
    nlohmann::json filled = j;
    bool placed = true;
    for (const auto& [field, member] : kFileFields) {
      const std::string& name = kept.*member;
      if (name.empty()) continue;
      if (leaves_dump_directory(name)) {
        placed = false;
        break;
      }
      const std::string target = "tensors/" + label + "/" + (name.rfind("tensors/", 0) == 0 ? name.substr(8) : name);
      placed = place_file(fs::path(source_dir) / name, fs::path(dir) / target);
      if (!placed) break;
      filled[field] = target;
    }
    if (!placed) {
      ++counts.missing;
      rewritten << line << '\n';
      continue;
    }
    if (!kept.precision.empty()) filled["precision"] = kept.precision;
    filled.erase("not_kept");
    filled["filled_by"] = label;
    ++counts.filled;
    rewritten << filled.dump() << '\n';
  }
  in.close();
  if (counts.filled > 0) {
    const fs::path temporary = manifest_path.string() + ".filling";
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << rewritten.str();
      if (!out.flush()) {
        outcome.error = "cannot write " + temporary.string();
        return;
      }
    }
    std::error_code error;
    fs::rename(temporary, manifest_path, error);
    if (error) {
      outcome.error = "cannot replace " + manifest_path.string() + ": " + error.message();
      return;
    }
  }
  outcome.filled += counts.filled;
  outcome.differed += counts.differed;
  outcome.missing += counts.missing;
}

}  // namespace

DumpFill fill_from(const std::string& dump_dir, const std::string& source_dir, const std::set<std::string>& op_keys,
                   const std::string& label) {
  DumpFill outcome;
  std::error_code error;
  if (fs::exists(fs::path(dump_dir) / "manifest.jsonl", error)) {
    fill_manifest(dump_dir, source_dir, op_keys, label, outcome);
    return outcome;
  }
  for (const auto& entry : fs::directory_iterator(dump_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank", 0) == 0 && fs::exists(entry.path() / "manifest.jsonl", error))
      fill_manifest(entry.path().string(), source_dir + "/" + name, op_keys, label, outcome);
    if (!outcome.error.empty()) break;
  }
  if (error) outcome.error = "cannot list " + dump_dir + ": " + error.message();
  return outcome;
}

}  // namespace diagnose::compare
