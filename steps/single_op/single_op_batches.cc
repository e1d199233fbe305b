#include "steps/single_op/single_op_batches.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"
#include "orchestrator/engine/step.h"
#include "steps/json_text.h"

namespace diagnose {

std::optional<std::vector<OpCount>> parse_op_inventory(const std::string& text, std::string* error) {
  nlohmann::json list = nlohmann::json::parse(text, nullptr, false);
  if (list.is_discarded() || !list.is_array()) {
    *error = "the op inventory is not a JSON list";
    return std::nullopt;
  }
  std::vector<OpCount> ops;
  std::set<std::string> seen;
  for (const nlohmann::json& entry : list) {
    if (!entry.is_object() || !entry.contains("op") || !entry["op"].is_string() ||
        entry["op"].get<std::string>().empty()) {
      *error = "op inventory entry without an op name: " + entry.dump();
      return std::nullopt;
    }
    OpCount op{entry["op"].get<std::string>(), entry.value("calls", 0LL)};
    if (seen.insert(op.op).second) ops.push_back(op);
  }
  return ops;
}

std::vector<std::string> single_op_args(const std::string& eager_dir, const std::string& out, const RunSpec& target,
                                        const std::string& switches_file, const std::vector<std::string>& ops,
                                        bool batched) {
  std::vector<std::string> args = {
      "single-op", "--from", eager_dir, "--out", out, "--backend", target.backend.value_or("inductor")};
  if (target.device) args.insert(args.end(), {"--device", *target.device});
  if (target.dtype) args.insert(args.end(), {"--dtype", *target.dtype});
  if (!switches_file.empty()) args.insert(args.end(), {"--switches", switches_file});
  args.insert(args.end(), {"--ops", joined(ops, ",")});
  if (!batched) args.insert(args.end(), {"--batch-graphs", "0"});
  return args;
}

std::vector<std::vector<std::string>> split_into_batches(const std::vector<std::string>& ops, size_t count) {
  std::vector<std::vector<std::string>> batches;
  count = std::min(std::max<size_t>(count, 1), ops.size());
  size_t start = 0;
  for (size_t b = 0; b < count; ++b) {
    size_t size = ops.size() / count + (b < ops.size() % count ? 1 : 0);
    batches.emplace_back(ops.begin() + static_cast<long>(start), ops.begin() + static_cast<long>(start + size));
    start += size;
  }
  return batches;
}

std::vector<std::vector<std::string>> split_by_cost(const std::vector<std::string>& ops, size_t count,
                                                    const std::map<std::string, double>& measured) {
  double known_sum = 0;
  size_t known = 0;
  for (const std::string& op : ops)
    if (auto it = measured.find(op); it != measured.end()) {
      known_sum += it->second;
      ++known;
    }
  if (known == 0) return split_into_batches(ops, count);
  count = std::min(std::max<size_t>(count, 1), ops.size());
  auto cost = [&](size_t i) {
    auto it = measured.find(ops[i]);
    return it != measured.end() ? it->second : known_sum / static_cast<double>(known);
  };
  std::vector<size_t> costliest_first(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) costliest_first[i] = i;
  std::stable_sort(costliest_first.begin(), costliest_first.end(),
                   [&](size_t a, size_t b) { return cost(a) > cost(b); });
  std::vector<double> load(count, 0);
  std::vector<size_t> batch_of(ops.size());
  for (size_t i : costliest_first) {
    size_t cheapest = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    batch_of[i] = cheapest;
    load[cheapest] += cost(i);
  }
  std::vector<std::vector<std::string>> batches(count);
  for (size_t i = 0; i < ops.size(); ++i) batches[batch_of[i]].push_back(ops[i]);
  batches.erase(std::remove_if(batches.begin(), batches.end(), [](const auto& b) { return b.empty(); }), batches.end());
  return batches;
}

MeasuredCosts earlier_op_costs(const std::string& run_dir, const std::string& workflow, const std::string& step_id) {
  namespace fs = boost::filesystem;
  std::vector<std::string> earlier;
  boost::system::error_code error;
  const fs::path current = fs::path(run_dir).lexically_normal();
  for (fs::directory_iterator it(current.parent_path(), error), end; !error && it != end; it.increment(error))
    if (it->path().lexically_normal() != current && fs::is_directory(it->path()))
      earlier.push_back(it->path().string());
  std::sort(earlier.rbegin(), earlier.rend());  // run directories start with their start time
  for (const std::string& dir : earlier) {
    std::optional<std::string> text = read_file(dir + "/report.json");
    nlohmann::json report = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
    if (!report.is_object() || string_at(report.value("workflow", nlohmann::json()), "name") != workflow ||
        !report.contains("steps") || !report["steps"].is_array())
      continue;
    MeasuredCosts costs;
    for (const nlohmann::json& step : report["steps"])
      if (string_at(step, "id") == step_id && step.contains("metrics") && step["metrics"].is_object())
        for (const auto& [op, cost] : op_costs(step["metrics"].value("op_times", nlohmann::json())))
          costs.seconds[op] = cost.compile_s + cost.run_s;
    if (costs.seconds.empty()) continue;
    costs.report = dir + "/report.json";
    return costs;
  }
  return {};
}

std::map<std::string, OpCost> op_costs(const nlohmann::json& entries) {
  std::map<std::string, OpCost> costs;
  if (!entries.is_array()) return costs;
  for (const nlohmann::json& entry : entries) {
    if (!entry.is_object() || !entry.contains("op") || !entry["op"].is_string()) continue;
    if (!entry.contains("compile_s") || !entry["compile_s"].is_number() || !entry.contains("run_s") ||
        !entry["run_s"].is_number())
      continue;
    OpCost cost;
    cost.compile_s = entry["compile_s"].get<double>();
    cost.run_s = entry["run_s"].get<double>();
    if (entry.contains("compiles") && entry["compiles"].is_number_integer()) cost.compiles = entry["compiles"];
    if (entry.contains("shared_compiles") && entry["shared_compiles"].is_array())
      cost.shared_compiles = entry["shared_compiles"];
    cost.settled_in_batched_compile = entry.value("settled_in_batched_compile", nlohmann::json()) == true;
    costs[entry["op"].get<std::string>()] = cost;
  }
  return costs;
}

std::map<std::string, OpCost> read_op_costs(const std::string& single_op_json) {
  nlohmann::json document = nlohmann::json::parse(single_op_json, nullptr, false);
  return document.is_object() && document.contains("ops") ? op_costs(document["ops"]) : std::map<std::string, OpCost>();
}

long long read_batched_compile_count(const std::string& single_op_json) {
  nlohmann::json document = nlohmann::json::parse(single_op_json, nullptr, false);
  if (!document.is_object() || !document.contains("batched_compiles") || !document["batched_compiles"].is_array())
    return 0;
  return static_cast<long long>(document["batched_compiles"].size());
}

BatchOutcome read_batch_progress(const std::string& progress_text, const std::vector<std::string>& batch,
                                 bool process_ok) {
  std::map<std::string, std::string> last_event, message, reason;
  std::string last_started;
  std::istringstream lines(progress_text);
  std::string line;
  BatchOutcome outcome;
  bool in_batched_compile = false;
  while (std::getline(lines, line)) {
    nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_object() && event.value("event", "") == "setup_failed") {
      outcome.setup_error = string_at(event, "message");
      continue;
    }
    if (event.is_object() && event.value("event", "") == "batched_compile") {
      in_batched_compile = true;
      continue;
    }
    if (event.is_discarded() || !event.is_object() || !event.contains("op") || !event["op"].is_string()) continue;
    std::string op = event["op"].get<std::string>();
    std::string kind = event.value("event", "");
    if (kind != "start" && kind != "done" && kind != "error" && kind != "skipped") continue;
    in_batched_compile = false;
    last_event[op] = kind;
    if (kind == "start") last_started = op;
    message[op] = string_at(event, "message");
    reason[op] = string_at(event, "reason");
  }

  outcome.died_in_batched_compile = !process_ok && in_batched_compile;
  for (const std::string& op : batch) {
    auto event = last_event.find(op);
    if (event == last_event.end()) {
      if (process_ok)
        outcome.errors.push_back({op, "the single-op run ended without checking it"});
      else
        outcome.not_started.push_back(op);
    } else if (event->second == "done") {
      outcome.done.push_back(op);
    } else if (event->second == "error") {
      outcome.errors.push_back({op, message[op]});
    } else if (event->second == "skipped") {
      outcome.skipped.push_back({op, reason[op].empty() ? "skipped" : reason[op], message[op]});
    } else if (!process_ok && op == last_started) {
      outcome.crashed = op;
    } else {
      outcome.errors.push_back({op, "started but never finished"});
    }
  }
  return outcome;
}

}  // namespace diagnose
