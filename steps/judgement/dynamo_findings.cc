#include "steps/judgement/dynamo_findings.h"

#include <algorithm>
#include <stdexcept>

#include "orchestrator/engine/step.h"

namespace diagnose {

namespace {

std::string text_of(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

void add_once(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// A custom op's schema check: each violation a finding naming the op (namespace::name, as
// torch.library registers it, and the overload the dump names).
void summarize_schema_check(const nlohmann::json& entry, const std::string& op, MetaCheckSummary& summary) {
  ++summary.custom_ops;
  const std::string schema = entry.value("schema", "");
  const std::string qualified = schema.substr(0, schema.find('('));
  const std::string name = qualified.empty() ? op : qualified + " (" + op + ")";
  if (entry.contains("schema_error"))
    summary.findings.push_back(
        {"schema check of custom op " + name + " raised: " + text_of(entry["schema_error"]), ""});
  if (!entry.contains("violations") || !entry["violations"].is_array()) return;
  for (const nlohmann::json& v : entry["violations"]) {
    if (!v.is_object()) continue;
    const std::string kind = v.contains("kind") ? text_of(v["kind"]) : "schema violation";
    const std::string what = v.contains("message") ? text_of(v["message"]) : "";
    add_once(summary.violating_ops, op);
    summary.violation_table.push_back({{"op", op}, {"schema", schema}, {"violation", kind}, {"what", what}});
    summary.findings.push_back({"custom op " + name + ": " + kind + ": " + what + "; schema " + schema +
                                    " (torch.compile trusts the schema, so compiled code may differ from eager)",
                                op});
  }
}

}  // namespace

MetaCheckSummary summarize_meta_check(const nlohmann::json& document) {
  if (!document.is_object() || !document.contains("ops") || !document["ops"].is_array())
    throw std::runtime_error("meta_check.json has no \"ops\" list");
  MetaCheckSummary summary;
  for (const nlohmann::json& entry : document["ops"]) {
    if (!entry.is_object() || !entry.contains("op") || !entry["op"].is_string())
      throw std::runtime_error("meta_check.json: an entry without an op name: " + entry.dump());
    std::string op = entry["op"].get<std::string>();
    std::string where =
        entry.contains("op_key") && entry["op_key"].is_string() ? entry["op_key"].get<std::string>() : op;
    std::string status = entry.value("status", "");
    if (status == "ok") {
      ++summary.ok;
    } else if (status == "skipped") {
      ++summary.skipped;
    } else if (status == "mismatch") {
      ++summary.mismatched;
      std::string fields;
      if (entry.contains("mismatches") && entry["mismatches"].is_array()) {
        for (const nlohmann::json& m : entry["mismatches"]) {
          if (!m.is_object()) continue;
          std::string field = m.contains("field") ? text_of(m["field"]) : "?";
          std::string output = m.contains("output") ? text_of(m["output"]) : "0";
          std::string eager = m.contains("eager") ? text_of(m["eager"]) : "?";
          std::string fake = m.contains("fake") ? text_of(m["fake"]) : "?";
          fields += (fields.empty() ? "" : "; ") + std::string("output ") + output + " " + field + ": eager " + eager +
                    ", meta " + fake;
          summary.table.push_back({{"op", where},
                                   {"output", m.value("output", nlohmann::json())},
                                   {"field", field},
                                   {"eager", eager},
                                   {"fake", fake}});
        }
      }
      add_once(summary.mismatched_ops, op);
      summary.findings.push_back({"meta (fake) result of " + op + " (" + where +
                                      ") differs from eager: " + (fields.empty() ? "no detail" : fields),
                                  op});
    } else if (status == "error") {
      ++summary.errors;
      summary.findings.push_back({"meta check of " + op + " raised: " + entry.value("message", ""), ""});
    } else {
      throw std::runtime_error("meta_check.json: op " + op + " has status '" + status +
                               "' (expected ok, mismatch, error or skipped)");
    }
    if (entry.contains("schema")) summarize_schema_check(entry, op, summary);
  }
  return summary;
}

std::string violation_kinds(const MetaCheckSummary& summary, const std::string& op) {
  std::vector<std::string> kinds;
  for (const nlohmann::json& row : summary.violation_table)
    if (row["op"] == op) add_once(kinds, row["violation"].get<std::string>());
  return joined(kinds);
}

GraphBreaks graph_breaks_of(const PluginStatus& status) {
  GraphBreaks breaks;
  breaks.count = status.graphs.graph_breaks.value_or(0);
  breaks.reasons = status.graphs.graph_break_reasons;
  if (breaks.count < static_cast<long long>(breaks.reasons.size()))
    breaks.count = static_cast<long long>(breaks.reasons.size());
  return breaks;
}

}  // namespace diagnose
