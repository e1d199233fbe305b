#include "orchestrator/ci/baseline.h"

#include "orchestrator/engine/digest.h"

#include <sys/utsname.h>
#include <unistd.h>
#include <boost/filesystem.hpp>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "orchestrator/engine/state.h"
#include "orchestrator/report/report_json.h"
#include "orchestrator/util/clock.h"
#include "runspec/plugin_status.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

constexpr int kBaselineVersion = 1;

std::string fnv1a64(const fs::path& file) {
  std::ifstream in(file.string(), std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  uint64_t hash = kFnv1aOffset;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash = fnv1a(std::string_view(buffer.data(), static_cast<size_t>(in.gcount())), hash);
  }
  return hex_digest(hash);
}

// Copies `from` into `to` (created), recording each file under `prefix` in `files`.
void copy_tree(const fs::path& from, const fs::path& to, const std::string& prefix, json& files) {
  fs::create_directories(to);
  for (fs::recursive_directory_iterator it(from), end; it != end; ++it) {
    fs::path relative = it->path().lexically_relative(from);
    if (fs::is_directory(it->path())) {
      fs::create_directories(to / relative);
    } else if (fs::is_regular_file(it->path())) {
      fs::copy_file(it->path(), to / relative);
      files[prefix + "/" + relative.generic_string()] = {{"size", fs::file_size(it->path())},
                                                         {"fnv1a64", fnv1a64(it->path())}};
    }
  }
}

json machine() {
  json m = json::object();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m["hostname"] = host;
  struct utsname u {};
  if (uname(&u) == 0) {
    m["os"] = std::string(u.sysname) + " " + u.release;
    m["arch"] = u.machine;
  }
  m["cpus"] = std::thread::hardware_concurrency();
  return m;
}

json read_json(const fs::path& path) {
  std::ifstream in(path.string());
  return json::parse(in, nullptr, false);
}

// The plugin run directory (status.json + outputs/) a source names, and the model version it carries.
struct ResolvedSource {
  fs::path run_dir;      // empty for a bare dump
  fs::path outputs_dir;  // final outputs
  fs::path dump_dir;     // op dump, may be absent
  std::string model_version;
  std::string description;
};

bool is_plugin_run(const fs::path& dir) { return fs::is_directory(dir / "outputs") && fs::exists(dir / "status.json"); }

ResolvedSource resolve(const BaselineSource& source) {
  fs::path path = fs::absolute(source.path).lexically_normal();
  if (!fs::exists(path)) throw std::runtime_error(source.path + ": no such file or directory");
  ResolvedSource r;
  if (fs::exists(path / "state.json")) {
    State state = load_state((path / "state.json").string());
    std::string step_id = source.run.substr(0, source.run.find('/'));
    std::string run_name = source.run.find('/') == std::string::npos ? "" : source.run.substr(source.run.find('/') + 1);
    for (const StepResult& step : state.steps) {
      if (r.model_version.empty() && step.metrics.contains("model_version") &&
          step.metrics["model_version"].is_string())
        r.model_version = step.metrics["model_version"].get<std::string>();
      if (!step_id.empty() && step.id != step_id) continue;
      for (const RunRecord& run : step.runs) {
        if (!run_name.empty() && run.name != run_name) continue;
        if (r.run_dir.empty() && run.status == RunStatus::Succeeded && is_plugin_run(run.dir)) {
          r.run_dir = run.dir;
          r.description = "run " + step.id + "/" + run.name + " of " + path.string();
        }
      }
    }
    if (r.run_dir.empty())
      throw std::runtime_error(source.path + ": no succeeded run " +
                               (source.run.empty() ? "" : "'" + source.run + "' ") +
                               "left the plugin's outputs (status.json and outputs/)" +
                               (source.run.empty() ? "; name one with --run STEP/RUN" : ""));
  } else if (is_plugin_run(path)) {
    r.run_dir = path;
    r.description = "plugin run " + path.string();
  } else if (fs::exists(path / "manifest.jsonl")) {
    r.outputs_dir = path;
    r.description = "dump " + path.string();
    return r;
  } else {
    throw std::runtime_error(source.path +
                             ": not a run directory (state.json), a plugin run (status.json + outputs/) or a diagnose "
                             "dump (manifest.jsonl)");
  }
  r.outputs_dir = r.run_dir / "outputs";
  if (fs::exists(r.run_dir / "dump" / "manifest.jsonl")) r.dump_dir = r.run_dir / "dump";
  return r;
}

}  // namespace

bool Baseline::has_dump() const { return fs::is_directory(dump_dir()); }

Baseline save_baseline(const BaselineSource& source, const std::string& dir, bool force) {
  ResolvedSource from = resolve(source);
  fs::path target = fs::absolute(dir).lexically_normal();
  auto occupied = [&] { return fs::exists(target) && !(fs::is_directory(target) && fs::is_empty(target)); };
  auto refusal = [&] {
    json existing = read_json(target / "baseline.json");
    std::string what = existing.is_object() ? " (model version " + existing.value("model_version", std::string("?")) +
                                                  ", saved " + existing.value("created", std::string("?")) + ")"
                                            : "";
    return std::runtime_error("baseline " + target.string() + " exists already" + what +
                              "; pass --force to replace it");
  };
  if (occupied() && !force) throw refusal();

  const PluginStatus status = from.run_dir.empty() ? PluginStatus() : read_plugin_status(from.run_dir.string());
  json metadata = {{"format", "diagnose-baseline"},
                   {"version", kBaselineVersion},
                   {"created", iso_time(now_seconds())},
                   {"source", from.description},
                   {"model_version", !source.model_version.empty() ? source.model_version
                                     : !from.model_version.empty() ? from.model_version
                                                                   : "unknown"},
                   {"torch_version", status.torch_version ? json(*status.torch_version) : json()},
                   {"backend", status.ran.backend},
                   {"mode", status.ran.mode},
                   {"device", status.ran.device},
                   {"dtype", status.ran.dtype},
                   {"switches", status.active_switches},
                   {"machine", machine()}};

  fs::path staging = target.parent_path() / (target.filename().string() + ".partial-" + std::to_string(getpid()));
  fs::remove_all(staging);
  try {
    json files = json::object();
    copy_tree(from.outputs_dir, staging / "outputs", "outputs", files);
    if (!from.dump_dir.empty()) copy_tree(from.dump_dir, staging / "dump", "dump", files);
    if (!from.run_dir.empty() && fs::exists(from.run_dir / "status.json")) {
      fs::copy_file(from.run_dir / "status.json", staging / "status.json");
      files["status.json"] = {{"size", fs::file_size(staging / "status.json")},
                              {"fnv1a64", fnv1a64(staging / "status.json")}};
    }
    metadata["files"] = files;
    write_file_atomically((staging / "baseline.json").string(), metadata.dump(2) + "\n");
  } catch (const std::exception& e) {
    boost::system::error_code ec;
    fs::remove_all(staging, ec);
    throw std::runtime_error("cannot save the baseline to " + target.string() + ": " + e.what());
  }

  // rename() onto an existing non-empty directory fails, so of several savers without --force
  // exactly one wins; with --force the old one is moved aside first.
  boost::system::error_code ec;
  if (force && occupied()) {
    fs::path aside = target.parent_path() / (target.filename().string() + ".replaced-" + std::to_string(getpid()));
    fs::rename(target, aside, ec);
    fs::rename(staging, target, ec);
    boost::system::error_code ignored;
    fs::remove_all(aside, ignored);
  } else {
    if (fs::is_directory(target) && fs::is_empty(target)) fs::remove(target, ec);
    fs::rename(staging, target, ec);
  }
  if (ec) {
    boost::system::error_code ignored;
    fs::remove_all(staging, ignored);
    if (occupied() && !force) throw refusal();
    throw std::runtime_error("cannot save the baseline to " + target.string() + ": " + ec.message());
  }
  return Baseline{target.string(), metadata};
}

Baseline load_baseline(const std::string& dir) {
  fs::path path = fs::absolute(dir).lexically_normal();
  auto bad = [&](const std::string& what) { return std::runtime_error("baseline " + path.string() + ": " + what); };
  if (!fs::is_directory(path)) throw bad("no such directory");
  if (!fs::exists(path / "baseline.json"))
    throw bad("not a baseline (no baseline.json); save one with 'diagnose baseline save'");
  std::ifstream in((path / "baseline.json").string());
  json metadata;
  try {
    metadata = json::parse(in);
  } catch (const json::parse_error& e) {
    throw bad("baseline.json is not valid JSON: " + std::string(e.what()));
  }
  if (!metadata.is_object() || metadata.value("format", json()) != "diagnose-baseline")
    throw bad("baseline.json is not a diagnose baseline (format is not \"diagnose-baseline\")");
  if (metadata.value("version", 0) != kBaselineVersion)
    throw bad("baseline.json has version " + metadata.value("version", json()).dump() +
              ", this diagnose reads version " + std::to_string(kBaselineVersion));
  if (!metadata.contains("files") || !metadata["files"].is_object()) throw bad("baseline.json lists no files");
  for (const auto& [name, expected] : metadata["files"].items()) {
    fs::path file = path / name;
    if (!fs::is_regular_file(file)) throw bad(name + " is missing");
    uintmax_t size = fs::file_size(file);
    if (!expected.is_object() || size != expected.value("size", uintmax_t{0}))
      throw bad(name + " has changed since the baseline was saved (" + std::to_string(size) + " bytes, recorded " +
                (expected.is_object() ? expected.value("size", json()).dump() : std::string("?")) + ")");
    if (fnv1a64(file) != expected.value("fnv1a64", std::string()))
      throw bad(name + " has changed since the baseline was saved (content differs from the recorded hash)");
  }
  if (!fs::exists(path / "outputs" / "manifest.jsonl")) throw bad("outputs/manifest.jsonl is missing");
  return Baseline{path.string(), metadata};
}

}  // namespace diagnose
