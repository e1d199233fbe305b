#include "orchestrator/engine/distinct_findings.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "orchestrator/util/strings.h"

namespace diagnose {

namespace {

// " rank 0 graph 1 call 2": the words that say which variant of a fact a finding is.
const std::regex& qualifiers() {
  static const std::regex pattern(R"(( (rank|graph|call) \d+)+)");
  return pattern;
}

struct Folded {
  Finding finding;  // its message with the qualifiers cut out at `at`
  size_t at = std::string::npos;
  std::map<std::string, std::vector<long>> values;  // "rank" -> 0, 1 in the order met
};

std::string listed(const std::string& word, const std::vector<long>& values) {
  std::vector<std::string> texts;
  for (long v : values) texts.push_back(std::to_string(v));
  return word + (values.size() > 1 ? "s " : " ") + joined(texts);
}

std::string message_of(const Folded& f) {
  if (f.at == std::string::npos) return f.finding.message;
  std::vector<std::string> parts;
  for (const char* word : {"rank", "graph", "call"})
    if (auto v = f.values.find(word); v != f.values.end()) parts.push_back(listed(word, v->second));
  const bool several = std::any_of(f.values.begin(), f.values.end(), [](const auto& v) { return v.second.size() > 1; });
  const std::string inserted = several ? " (" + joined(parts, "; ") + ")" : " " + joined(parts, " ");
  std::string message = f.finding.message;
  return message.insert(f.at, inserted);
}

// A finding of the final outputs' comparison ("final outputs: ...") says the same fact as the
// same finding of the ops' comparison: the first said is kept.
constexpr const char* kFinalOutputs = "final outputs: ";
constexpr const char* kFirstFailing = "first failing op";
constexpr const char* kErrorStarts = "error starts at op ";

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::string without_final_outputs(const std::string& message) {
  return starts_with(message, kFinalOutputs) ? message.substr(std::string(kFinalOutputs).size()) : message;
}

// "error starts at op X (why)..." where "first failing op ...: X..." is said already: one fact,
// said once, as "first failing op ...: X...; the error starts there (why)" (why: what is known of
// its inputs, compare::source_inputs_text).
std::vector<Finding> error_start_folded(std::vector<Finding> findings) {
  std::vector<Finding> out;
  for (Finding& f : findings) {
    const std::string start = kErrorStarts + f.op + " (";
    const size_t close = f.message.find(')', start.size());
    if (!f.op.empty() && starts_with(f.message, start) && close != std::string::npos) {
      auto first = std::find_if(out.begin(), out.end(), [&](const Finding& o) {
        return o.op == f.op && starts_with(o.message, kFirstFailing);
      });
      if (first != out.end()) {
        first->message += "; the error starts there " + f.message.substr(start.size() - 1, close - start.size() + 2);
        continue;
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

std::vector<Finding> distinct_findings(const std::vector<Finding>& findings, const std::string& culprit) {
  std::vector<Folded> folded;
  // (message without qualifiers nor "final outputs: ", op)
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const Finding& f : findings) {
    Folded candidate{f, std::string::npos, {}};
    std::smatch m;
    if (std::regex_search(f.message, m, qualifiers())) {
      candidate.at = static_cast<size_t>(m.position(0));
      candidate.finding.message = m.prefix().str() + m.suffix().str();
      static const std::regex one(R"((rank|graph|call) (\d+))");
      const std::string run = m.str(0);
      for (std::sregex_iterator it(run.begin(), run.end(), one), end; it != end; ++it)
        candidate.values[(*it)[1]].push_back(std::stol((*it)[2]));
    }
    auto [slot, fresh] =
        index.emplace(std::make_pair(without_final_outputs(candidate.finding.message), f.op), folded.size());
    if (fresh) {
      folded.push_back(std::move(candidate));
      continue;
    }
    Folded& kept = folded[slot->second];
    for (const auto& [word, values] : candidate.values)
      for (long v : values) {
        std::vector<long>& all = kept.values[word];
        if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
      }
  }
  std::vector<Finding> out;
  for (const Folded& f : folded) out.push_back({message_of(f), f.finding.op});
  out = error_start_folded(std::move(out));
  if (!culprit.empty())
    std::stable_partition(out.begin(), out.end(), [&](const Finding& f) { return f.op == culprit; });
  return out;
}

}  // namespace diagnose
