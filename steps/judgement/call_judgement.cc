#include "steps/judgement/call_judgement.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "compare/manifest.h"
#include "compare/match.h"
#include "compare/tensor.h"

namespace diagnose {

namespace {

constexpr const char* kStatePrefix = "state.";
constexpr uint64_t kMaxElementsToLocate = uint64_t{1} << 24;

// "2", "2–4", "1, 3–5": the calls of `steps` (sorted), numbered from 1.
std::string call_ranges(const std::vector<int64_t>& steps) {
  std::string text;
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(steps[i] + 1);
    if (j > i) text += "–" + std::to_string(steps[j] + 1);
    i = j + 1;
  }
  return text;
}

// "buffer `k_cache`", "input `args.1`", "parameter `w`".
std::string state_name(const std::string& path) {
  static const std::vector<std::pair<std::string, std::string>> kinds = {
      {"buffers.", "buffer"}, {"parameters.", "parameter"}, {"inputs.", "input"}};
  for (const auto& [prefix, kind] : kinds)
    if (path.rfind(prefix, 0) == 0) return kind + " `" + path.substr(prefix.size()) + "`";
  return "`" + path + "`";
}

// Index ranges of one dimension: "0", "3–5", "0, 2, 7–9" (the first few).
std::string index_ranges(const std::set<uint64_t>& indexes) {
  std::vector<int64_t> sorted(indexes.begin(), indexes.end());
  std::string text;
  size_t shown = 0;
  for (size_t i = 0; i < sorted.size(); ++shown) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (shown == 4) return text + ", ...";
    text += (text.empty() ? "" : ", ") + std::to_string(sorted[i]);
    if (j > i) text += "–" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return text;
}

// Where two tensors of one shape differ: "in 32 of 512 elements (dim 2 at 0)"; only the dimensions
// whose differing indexes are not all of them are named. "" when the tensors cannot be read.
std::string difference_place(const compare::Row& row, const compare::Tolerances& tolerances) {
  const compare::RowSpec& spec = row.spec;
  if (!spec.golden || !spec.mine || spec.golden->shape != spec.mine->shape) return "";
  const compare::Shape& shape = spec.golden->shape;
  const uint64_t n = compare::element_count(shape);
  if (n == 0 || n > kMaxElementsToLocate) return "";
  std::string error;
  const auto golden = compare::read_all_float(*spec.golden, &error);
  const auto mine = compare::read_all_float(*spec.mine, &error);
  if (!golden || !mine || golden->size() != n || mine->size() != n) return "";
  const compare::TolerancePreset& preset = tolerances.for_dtype(spec.mine->logical_dtype());
  std::vector<std::set<uint64_t>> at(shape.size());
  uint64_t differing = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double g = (*golden)[i], m = (*mine)[i];
    const bool same =
        (std::isnan(g) && std::isnan(m)) || g == m ||
        (std::isfinite(g) && std::isfinite(m) && std::fabs(m - g) <= preset.atol + preset.rtol * std::fabs(g));
    if (same) continue;
    ++differing;
    for (size_t d = shape.size(), rest = i; d-- > 0;) {
      at[d].insert(rest % shape[d]);
      rest /= shape[d];
    }
  }
  if (differing == 0) return "";
  std::string dims;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1 && at[d].size() < static_cast<uint64_t>(shape[d]))
      dims += (dims.empty() ? "" : ", ") + ("dim " + std::to_string(d) + " at " + index_ranges(at[d]));
  return "in " + std::to_string(differing) + " of " + std::to_string(n) + " elements" +
         (dims.empty() ? "" : " (" + dims + ")");
}

// "aten.index_copy_.default at model.py:32 `self.k.index_copy_(2, pos, k)`": an op and where it came from.
std::string writer_text(const std::string& op, const std::vector<compare::NodeSource>& sources) {
  if (sources.empty()) return op;
  const compare::NodeSource& source = sources.front();
  std::string text = op.empty() ? source.node : op;
  if (!source.module.empty()) text += " in module " + source.module;
  if (!source.line.empty()) text += " at " + source.line + (source.code.empty() ? "" : " `" + source.code + "`");
  return text;
}

// The one-rank manifest of a dump directory; empty records when it has none or several ranks.
compare::Manifest single_manifest(const std::string& dir) {
  const std::map<int, std::string> ranks = compare::manifest_ranks(dir);
  if (ranks.size() != 1) return {};
  return compare::read_manifest(ranks.begin()->second);
}

std::string content_hash(const compare::ManifestRecord& record) {
  const std::optional<compare::RecordedStats> stats = compare::recorded_stats(record);
  return stats ? stats->hash : "";
}

}  // namespace

std::string call_name(int64_t step) { return "call " + std::to_string(step + 1); }

CallJudgement judge_calls(const compare::CompareResult& compared, const compare::Tolerances& tolerances) {
  CallJudgement judgement;
  std::map<int64_t, CallOutcome> calls;
  std::map<std::string, StateDifference> first_difference;  // by state path
  const auto note_state = [&](StateDifference difference) {
    auto [it, fresh] = first_difference.try_emplace(difference.path, difference);
    if (!fresh && difference.step < it->second.step) it->second = std::move(difference);
  };
  std::vector<const compare::Row*> rows;
  for (const compare::RowGroup& group : compared.groups)
    for (const compare::Row& row : group.rows) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const compare::Row* a, const compare::Row* b) { return a->spec.order < b->spec.order; });
  for (const compare::Row* row : rows) {
    CallOutcome& call = calls[row->spec.token_id];
    call.step = row->spec.token_id;
    if (row->verdict == compare::Verdict::Pass || row->verdict == compare::Verdict::Fail) ++call.judged;
    if (row->verdict != compare::Verdict::Fail) continue;
    ++call.failed;
    if (!row->spec.state) {
      if (call.first_failing.empty()) call.first_failing = row->spec.op_key;
      call.output_failed = true;
      continue;
    }
    if (call.first_state.empty()) call.first_state = row->spec.op_key;
    call.state_failed = true;
    StateDifference difference;
    difference.step = row->spec.token_id;
    difference.path = row->spec.op_key.substr(std::string(kStatePrefix).size());
    difference.where = difference_place(*row, tolerances);
    if (!row->spec.sources.empty()) difference.written = writer_text("", row->spec.sources);
    note_state(std::move(difference));
  }
  static const std::regex state_key(R"(/step(\d+)/state\.(.+)$)");
  for (const auto& [id, reason] : compared.summary.unmatched) {
    std::smatch m;
    const bool golden_only = reason == compare::kStateOnlyInGolden, target_only = reason == compare::kStateOnlyInTarget;
    if (!(golden_only || target_only) || !std::regex_search(id, m, state_key)) continue;
    StateDifference difference;
    difference.step = std::stoll(m[1]);
    difference.path = m[2];
    difference.only_in = golden_only ? "golden" : "target";
    CallOutcome& call = calls[difference.step];
    call.step = difference.step;
    call.state_failed = true;
    ++call.failed;
    if (call.first_state.empty()) call.first_state = kStatePrefix + difference.path;
    note_state(std::move(difference));
  }
  for (auto& [step, call] : calls) judgement.calls.push_back(call);
  for (auto& [path, difference] : first_difference) judgement.state.push_back(difference);
  std::stable_sort(judgement.state.begin(), judgement.state.end(),
                   [](const StateDifference& a, const StateDifference& b) { return a.step < b.step; });
  return judgement;
}

void attribute_state_writers(CallJudgement& judgement, const std::string& golden_outputs,
                             const std::string& golden_dump) {
  const auto unnamed = [](const StateDifference& d) { return d.written.empty() && d.only_in.empty(); };
  if (std::none_of(judgement.state.begin(), judgement.state.end(), unnamed)) return;
  const compare::Manifest outputs = single_manifest(golden_outputs);
  std::map<std::pair<std::string, int64_t>, std::string> state_hash;  // (path, step) -> hash
  for (const compare::ManifestRecord& r : outputs.records)
    if (r.kind == "state") state_hash[{r.path, r.step}] = content_hash(r);
  const compare::Manifest dump = single_manifest(golden_dump);
  for (StateDifference& d : judgement.state) {
    if (!unnamed(d)) continue;
    const auto after = state_hash.find({d.path, d.step});
    const auto before = state_hash.find({d.path, d.step - 1});
    if (after == state_hash.end() || after->second.empty()) continue;
    if (before != state_hash.end() && before->second == after->second) continue;  // the call did not change it
    const compare::ManifestRecord* writer = nullptr;
    for (const compare::ManifestRecord& r : dump.records)
      if (r.kind == "op" && r.io == "output" && r.step == d.step && content_hash(r) == after->second &&
          (!writer || r.seq < writer->seq))
        writer = &r;
    if (writer) d.written = writer_text(writer->op, writer->sources);
  }
}

std::optional<int64_t> CallJudgement::first_diverging_step() const {
  for (const CallOutcome& call : calls)
    if (call.failed > 0) return call.step;
  return std::nullopt;
}

std::optional<int64_t> CallJudgement::state_diverges_first() const {
  for (const CallOutcome& call : calls) {
    if (call.failed == 0) continue;
    if (call.state_failed && !call.output_failed) return call.step;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string CallJudgement::text() const {
  if (calls.size() < 2) return "";
  std::vector<int64_t> matching, diverging, state_differs;
  for (const CallOutcome& call : calls) {
    (call.output_failed ? diverging : matching).push_back(call.step);
    if (call.state_failed) state_differs.push_back(call.step);
  }
  const std::string of = " of " + std::to_string(calls.size());
  const auto calls_word = [](const std::vector<int64_t>& steps) {
    return std::string(steps.size() == 1 ? "call " : "calls ");
  };
  const auto first_where = [&](auto failed, std::string CallOutcome::*name) {
    const CallOutcome& first = *std::find_if(calls.begin(), calls.end(), failed);
    return call_name(first.step) + ": " + first.*name;
  };
  std::string text;
  if (!matching.empty())
    text = calls_word(matching) + call_ranges(matching) + of + (matching.size() == 1 ? " matches" : " match");
  if (!diverging.empty())
    text += std::string(text.empty() ? "" : "; ") + calls_word(diverging) + call_ranges(diverging) +
            (matching.empty() ? of : "") + (diverging.size() == 1 ? " diverges" : " diverge") + " (first at " +
            first_where([](const CallOutcome& c) { return c.output_failed; }, &CallOutcome::first_failing) + ")";
  if (!state_differs.empty())
    text += "; the state differs after " + calls_word(state_differs) + call_ranges(state_differs) + " (first after " +
            first_where([](const CallOutcome& c) { return c.state_failed; }, &CallOutcome::first_state) + ")";
  return text;
}

std::string CallJudgement::failing_calls_text() const {
  std::vector<int64_t> failing;
  for (const CallOutcome& call : calls)
    if (call.output_failed || call.state_failed) failing.push_back(call.step);
  if (calls.size() < 2 || failing.empty()) return "";
  return (failing.size() > 1 ? "calls " : "call ") + call_ranges(failing);
}

std::vector<std::string> CallJudgement::state_texts(const std::string& golden_side) const {
  std::vector<std::string> texts;
  for (const StateDifference& d : state) {
    std::string text = "after " + call_name(d.step) + ", " + state_name(d.path);
    if (d.only_in == "golden") {
      text += " was written in place by " + golden_side + " and not by the target";
    } else if (d.only_in == "target") {
      text += " was written in place by the target and not by " + golden_side;
    } else {
      text += " differs from " + golden_side + (d.where.empty() ? "" : " " + d.where);
      if (!d.written.empty()) text += "; written in " + golden_side + " by " + d.written;
    }
    texts.push_back(text);
  }
  return texts;
}

nlohmann::json CallJudgement::to_json() const {
  nlohmann::json table = nlohmann::json::array();
  for (const CallOutcome& c : calls)
    table.push_back(
        {{"call", c.step + 1},
         {"step", c.step},
         {"judged", c.judged},
         {"failed", c.failed},
         {"first_failing", c.first_failing.empty() ? nlohmann::json() : nlohmann::json(c.first_failing)},
         {"first_state_differing", c.first_state.empty() ? nlohmann::json() : nlohmann::json(c.first_state)}});
  nlohmann::json state_table = nlohmann::json::array();
  for (const StateDifference& d : state)
    state_table.push_back({{"call", d.step + 1},
                           {"path", d.path},
                           {"where", d.where},
                           {"written_by", d.written},
                           {"written_by_one_run", d.only_in.empty() ? nlohmann::json() : nlohmann::json(d.only_in)}});
  const std::optional<int64_t> first = first_diverging_step();
  return {{"calls", table},
          {"first_diverging_call", first ? nlohmann::json(*first + 1) : nlohmann::json()},
          {"state", state_table},
          {"state_diverges_first", state_diverges_first().has_value()}};
}

}  // namespace diagnose
