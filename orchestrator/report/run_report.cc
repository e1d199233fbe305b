#include "orchestrator/report/run_report.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>
#include <map>
#include <set>

#include "orchestrator/report/report_json.h"
#include "orchestrator/util/log_tail.h"

namespace diagnose {

namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

constexpr uintmax_t kMaxJsonBytes = 64u << 20;

json read_json_file(const std::string& path) {
  boost::system::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxJsonBytes) return nullptr;
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

double duration(double started, double finished) { return started > 0 && finished >= started ? finished - started : 0; }

// The `when` conditions, from the run's resolved configuration (absent in old run directories).
std::map<std::string, std::string> conditions(const std::string& run_dir) {
  std::map<std::string, std::string> when;
  json resolved = read_json_file(run_dir + "/resolved.json");
  if (resolved.is_object() && resolved.contains("steps") && resolved["steps"].is_array())
    for (const auto& s : resolved["steps"])
      if (s.is_object() && s.value("when", json("")).is_string() && !s.value("when", std::string()).empty())
        when[s.value("id", std::string())] = s.value("when", std::string());
  return when;
}

// JSON files of the step: named as evidence, or in the step's directory (two levels deep).
std::vector<std::pair<std::string, json>> step_documents(const std::string& run_dir, const StepResult& step) {
  std::vector<std::string> candidates, found;
  for (const Evidence& e : step.evidence)
    if (e.kind == "file" && fs::path(e.path).extension() == ".json") candidates.push_back(e.path);
  fs::path dir = fs::path(run_dir) / "steps" / step.id;
  boost::system::error_code ec;
  if (fs::is_directory(dir, ec)) {
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it.depth() >= 1 && fs::is_directory(it->path(), ec)) it.disable_recursion_pending();
      if (it->path().extension() == ".json" && fs::is_regular_file(it->path(), ec))
        found.push_back(it->path().string());
    }
  }
  std::sort(found.begin(), found.end());
  candidates.insert(candidates.end(), found.begin(), found.end());
  std::set<std::string> seen;
  std::vector<std::pair<std::string, json>> documents;
  for (const std::string& path : candidates) {
    std::string key = fs::path(path).lexically_normal().string();
    if (!seen.insert(key).second) continue;
    std::string name = fs::path(path).filename().string();
    if (name == "status.json" || name == "spec.json") continue;
    json document = read_json_file(path);
    if (document.is_object()) documents.emplace_back(path, std::move(document));
  }
  return documents;
}

// Of a compare result, what the plots and the worst rows' table read (its rows can be many).
json compare_essentials(const json& result) {
  static const std::vector<std::string> kRowKeys = {"op_key",
                                                    "io",
                                                    "index",
                                                    "data_id",
                                                    "elements",
                                                    "verdict",
                                                    "cosine_unrounded",
                                                    "cosine_similarity",
                                                    "relative_euclidean_distance",
                                                    "max_relative_error",
                                                    "max_absolute_error",
                                                    "my_dtype",
                                                    "judged_by",
                                                    "cmp_fail_reason"};
  json kept = {{"format", result["format"]}};
  if (result.contains("summary") && result["summary"].is_object()) {
    kept["summary"] = json::object();
    for (const char* key : {"divergences", "unmatched"})
      if (result["summary"].contains(key)) kept["summary"][key] = result["summary"][key];
  } else if (result.contains("summary")) {
    kept["summary"] = result["summary"];
  }
  if (!result.contains("groups") || !result["groups"].is_array()) return kept;
  kept["groups"] = json::array();
  for (const json& group : result["groups"]) {
    if (!group.is_object() || !group.contains("rows") || !group["rows"].is_array()) {
      kept["groups"].push_back(group);
      continue;
    }
    json g = json::object();
    for (const char* key : {"rank", "graph"})
      if (group.contains(key)) g[key] = group[key];
    g["rows"] = json::array();
    for (const json& row : group["rows"]) {
      if (!row.is_object()) {
        g["rows"].push_back(row);
        continue;
      }
      json r = json::object();
      for (const std::string& key : kRowKeys)
        if (row.contains(key)) r[key] = row[key];
      g["rows"].push_back(std::move(r));
    }
    kept["groups"].push_back(std::move(g));
  }
  return kept;
}

// The documents the page draws, recognised by their content.
std::vector<ReportSection> sections(const std::string& run_dir, const StepResult& step) {
  std::vector<ReportSection> out;
  for (auto& [path, document] : step_documents(run_dir, step)) {
    if (document.value("format", "") == "diagnose-compare-result")
      out.push_back({ReportSection::Kind::Compare, path, compare_essentials(document)});
    else if (document.contains("conclusion") && document.contains("trials") && document["trials"].is_array())
      out.push_back({ReportSection::Kind::Bisection, path, std::move(document)});
    else if (document.value("format", "") == "diagnose-history-trend")
      out.push_back({ReportSection::Kind::Trend, path, std::move(document)});
  }
  return out;
}

ReportedRun reported_run(const RunRecord& r) {
  ReportedRun run;
  static_cast<RunCommand&>(run) = r;
  static_cast<RunEnding&>(run) = r;
  run.started = iso_time(r.started);
  bool timed = r.started > 0 && r.finished >= r.started;
  run.finished = timed ? iso_time(r.finished) : json();
  run.duration_s = duration(r.started, r.finished);
  boost::system::error_code ec;
  run.dump_kept = !r.dump_dir.empty() && fs::exists(r.dump_dir, ec);
  if (r.status != RunStatus::Succeeded) run.stderr_tail = log_tail(r.stderr_path);
  if (r.status != RunStatus::Succeeded && r.status != RunStatus::Pending)
    run.log_tail = run.stderr_tail.empty() ? log_tail(r.stdout_path) : run.stderr_tail;
  return run;
}

}  // namespace

std::string section_kind_name(ReportSection::Kind kind) {
  switch (kind) {
    case ReportSection::Kind::Compare: return "compare";
    case ReportSection::Kind::Bisection: return "bisection";
    case ReportSection::Kind::Trend: return "trend";
  }
  return "compare";
}

RunReport run_report(const State& state, const Verdict& verdict) {
  RunReport report;
  report.workflow_name = state.workflow_name;
  report.workflow_path = state.workflow_path;
  report.run_dir = state.run_dir;
  report.started = iso_time(state.started);
  report.finished = iso_time(state.finished);
  report.duration_s = duration(state.started, state.finished);
  report.complete = state.finished > 0 && !state.interrupted;
  report.verdict = verdict;
  report.dump_budget = state.dump_budget;
  std::map<std::string, std::string> when = conditions(state.run_dir);
  for (const StepResult& s : state.steps) {
    StepReport step;
    static_cast<StepOutcome&>(step) = s;
    step.started = iso_time(s.started);
    step.duration_s = duration(s.started, s.finished);
    for (const RunRecord& r : s.runs) step.runs.push_back(reported_run(r));
    if (auto condition = when.find(s.id); condition != when.end()) step.when = condition->second;
    step.sections = sections(state.run_dir, s);
    report.steps.push_back(std::move(step));
  }
  return report;
}

}  // namespace diagnose
