#include "orchestrator/report/terminal_verdict.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>

#include "orchestrator/engine/replay_commands.h"
#include "orchestrator/util/strings.h"

namespace diagnose {

namespace {

using nlohmann::json;

constexpr size_t kMinWidth = 40;
constexpr size_t kLabelWidth = 11;  // "what to do " and the gutter before it

const StepReport* find_step(const RunReport& report, const std::string& id) {
  for (const StepReport& s : report.steps)
    if (s.id == id) return &s;
  return nullptr;
}

// A step's metric; null when it has none (or its metrics are not an object, in a hand-edited report.json).
json metric(const StepReport& step, const char* key) {
  return step.metrics.is_object() && step.metrics.contains(key) ? step.metrics[key] : json();
}

std::vector<std::string> strings_of(const json& value) {
  std::vector<std::string> out;
  if (value.is_array())
    for (const json& v : value)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

std::string first_match(const std::string& text, const std::regex& pattern) {
  std::smatch m;
  return std::regex_search(text, m, pattern) ? m.str(0) : "";
}

// A place of the user's code as dump_judgement writes it, "[custom op C ]module M file.py:24 `code`":
// the file:line first (what a person looks for), then the rest, and the code line.
struct Place {
  std::string file_line, rest, code;
};

Place place_of(const std::string& text) {
  static const std::regex file_line(R"(^\S+:\d+$)");
  Place p;
  const size_t tick = text.find('`');
  if (tick != std::string::npos) {
    const size_t end = text.rfind('`');
    p.code = text.substr(tick + 1, end > tick ? end - tick - 1 : std::string::npos);
  }
  std::vector<std::string> words;
  std::istringstream in(text.substr(0, tick));
  for (std::string w; in >> w;) words.push_back(w);
  if (!words.empty() && std::regex_match(words.back(), file_line)) {
    p.file_line = words.back();
    words.pop_back();
  }
  p.rest = joined(words, " ");
  return p;
}

bool names_a_place(const StepReport& step) {
  return !strings_of(metric(step, "culprit_sources")).empty() || !strings_of(metric(step, "culprit_nodes")).empty();
}

// A step whose candidate an intervention rejected keeps its first failing row's place in its
// metrics, but that place is not where the error starts (its rows still say how sure).
bool candidate_rejected(const StepReport& step) {
  const json confirmation = metric(step, "confirmation");
  return confirmation.is_object() && confirmation.value("outcome", "") == "rejected";
}

// The step that says where: the deciding step when its culprit has a place in the code or FX
// nodes, else the first failed step whose has (a fusion rule's bisection knows no code; the graph
// comparison found where the error shows).
const StepReport* step_with_place(const RunReport& report) {
  const StepReport* decisive = find_step(report, report.verdict.step);
  if (decisive && names_a_place(*decisive)) return decisive;
  for (const std::string& id : report.verdict.failed_steps)
    if (const StepReport* s = find_step(report, id); s && names_a_place(*s)) return s;
  return nullptr;
}

// Of a state culprit ("state.buffers.k_cache"), the place that writes it in eager, as its finding
// says: "... buffer `k_cache` differs ...; written in eager by aten.index_copy.default at
// model.py:32 `self.k_cache.index_copy_(...)`".
std::optional<Place> writer_place(const Verdict& v) {
  static const std::regex written(R"(written in eager by (\S+) at (\S+:\d+) `([^`]*)`)");
  const std::string name = v.culprit.substr(v.culprit.rfind('.') + 1);
  for (const Finding& f : v.findings) {
    std::smatch m;
    if (f.message.find("`" + name + "`") != std::string::npos && std::regex_search(f.message, m, written))
      return Place{m.str(2), "written in eager by " + m.str(1), m.str(3)};
  }
  return std::nullopt;
}

void where_lines(const RunReport& report, std::vector<VerdictLine>& lines) {
  const StepReport* step = step_with_place(report);
  if (step && candidate_rejected(*step)) step = nullptr;
  if (!step) {
    if (const std::optional<Place> writer =
            report.verdict.culprit.empty() ? std::nullopt : writer_place(report.verdict)) {
      lines.push_back({"where", writer->file_line + " " + writer->rest, false, 2});
      lines.push_back({"", "  " + writer->code, true});
    }
    return;
  }
  const std::vector<std::string> places = strings_of(metric(*step, "culprit_sources"));
  const json op = metric(*step, "culprit");
  const std::string elsewhere = step->id == report.verdict.step
                                    ? ""
                                    : "the error starts" +
                                          (op.is_string() ? " at " + op.get<std::string>() : std::string()) +
                                          " (step " + step->id + ")";
  if (places.empty()) {
    if (elsewhere.empty()) return;
    lines.push_back({"where", elsewhere, false});
  } else {
    const Place first = place_of(places.front());
    lines.push_back({"where", first.file_line + (first.file_line.empty() ? "" : " ") + first.rest, false, 2});
    if (!first.code.empty()) lines.push_back({"", "  " + first.code, true});
    if (!elsewhere.empty()) lines.push_back({"", elsewhere, false, 2});
  }
  std::vector<std::string> more;
  if (places.size() > 1) more.push_back(std::to_string(places.size() - 1) + " more place(s) in the code");
  const size_t nodes = strings_of(metric(*step, "culprit_nodes")).size();
  if (nodes > 1) more.push_back(std::to_string(nodes) + " fused FX nodes");
  if (!more.empty()) lines.push_back({"", "+ " + joined(more) + ": in the report", false, 2});
}

std::string number_text(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  return v.dump();
}

// What a confirmation (issue 40's, on the step's metrics or the verdict's evidence) says, whatever its form.
std::string confirmation_text(const json& c) {
  if (c.is_string()) return c.get<std::string>();
  if (c.is_boolean()) return c.get<bool>() ? "confirmed" : "not confirmed";
  if (!c.is_object()) return "";
  for (const char* key : {"text", "summary", "how"})
    if (c.contains(key) && c[key].is_string()) return c[key].get<std::string>();
  if (c.contains("confirmed") && c["confirmed"].is_boolean()) return c["confirmed"] ? "confirmed" : "not confirmed";
  return "";
}

// The numbers that decided it, each once: rows failing of those judged, the error against float64
// next to eager's, which calls and ranks, the search's trials, whether a run confirmed it; of the
// deciding step, then of the step that says where.
std::vector<std::string> how_sure(const RunReport& report) {
  const Verdict& v = report.verdict;
  const StepReport* decisive = find_step(report, v.step);
  std::vector<std::string> facts;
  auto add = [&](const std::string& fact) {
    if (!fact.empty() && std::find(facts.begin(), facts.end(), fact) == facts.end()) facts.push_back(fact);
  };
  if (!decisive) return facts;
  static const std::regex rows(R"(\d+ of \d+ judged rows fail)");
  static const std::regex float64(R"(rmse to float64 [^);]*)");
  static const std::regex calls(R"(calls? [0-9][^;(]* diverges?)");
  const StepReport* place = step_with_place(report);
  for (const StepReport* step : {decisive, place == decisive ? nullptr : place}) {
    if (!step) continue;
    const json m = step->metrics.is_object() ? step->metrics : json::object();
    const std::string culprit = m.value("culprit", json()).is_string() ? m["culprit"].get<std::string>() : v.culprit;
    add(first_match(step->summary, rows));
    std::string error;
    for (const Finding& f : step->findings)
      if (error.empty() && f.op == culprit) error = first_match(f.message, float64);
    add(error.empty() ? first_match(step->summary, float64) : error);
    add(first_match(step->summary, calls));
    std::vector<std::string> ranks;
    if (m.contains("failing_ranks") && m["failing_ranks"].is_array())
      for (const json& r : m["failing_ranks"]) ranks.push_back(number_text(r));
    if (m.contains("departing_rank") && m["departing_rank"].is_number())
      add("rank " + number_text(m["departing_rank"]) + " departs from the others");
    else if (!ranks.empty())
      add((ranks.size() == 1 ? "rank " : "ranks ") + joined(ranks));
    if (m.contains("trials") && m["trials"].is_number()) {
      std::string search = number_text(m["trials"]) + " trial runs";
      if (m.contains("verified") && m["verified"] == true) search += ", verified";
      if (m.contains("confidence") && m["confidence"].is_string())
        search += ", confidence " + m["confidence"].get<std::string>();
      add(search);
    }
    if (m.contains("repro_fails") && m["repro_fails"].is_boolean())
      add(m["repro_fails"].get<bool>() ? "its standalone repro fails" : "its standalone repro does not fail alone");
    add(confirmation_text(m.value("confirmation", json())));
  }
  for (const Evidence& e : v.evidence)
    if (e.name == "confirmation") add(confirmation_text(e.value));
  // A step with none of these numbers: its summary up to its first clause.
  if (facts.empty()) add(decisive->summary.substr(0, decisive->summary.find("; ")));
  return facts;
}

// Of a run with no problem, what was judged and passed: "graph_compare: 36 op rows and 16 final
// output rows judged, all within tolerance".
std::vector<std::string> rows_passed(const RunReport& report) {
  std::vector<std::string> facts;
  for (const StepReport& step : report.steps) {
    if (step.status != StepStatus::Pass) continue;
    const json ops = metric(step, "judged"), finals = metric(step, "final_outputs");
    std::vector<std::string> parts;
    if (ops.is_number() && ops != 0) parts.push_back(number_text(ops) + " op rows");
    if (finals.is_object() && finals.contains("judged") && finals["judged"].is_number() && finals["judged"] != 0)
      parts.push_back(number_text(finals["judged"]) + " final output rows");
    if (!parts.empty()) facts.push_back(step.id + ": " + joined(parts, " and ") + " judged, all within tolerance");
  }
  return facts;
}

// What to do: the workaround the deciding step found (a bisection's knob, and the file it wrote
// for it), else the category's advice (in the report either way).
void what_to_do(const RunReport& report, std::vector<VerdictLine>& lines) {
  const Verdict& v = report.verdict;
  const StepReport* decisive = find_step(report, v.step);
  if (decisive && !v.culprit.empty() && metric(*decisive, "knob").is_string()) {
    auto file = std::find_if(decisive->evidence.begin(), decisive->evidence.end(), [](const Evidence& e) {
      return e.kind == "file" && e.name.rfind("workaround", 0) == 0 && !e.path.empty();
    });
    const bool has_file = file != decisive->evidence.end();
    const json setting = metric(*decisive, "workaround_setting");
    lines.push_back({"what to do",
                     (setting.is_string() ? setting.get<std::string>()
                                          : v.culprit + " off through " + metric(*decisive, "knob").get<std::string>() +
                                                " works around it") +
                         (has_file ? ":" : "."),
                     false});
    if (has_file) lines.push_back({"", file->path, true});
    return;
  }
  if (!v.advice.empty()) lines.push_back({"what to do", v.advice, false, 2});
}

// Where to look further: report.html, then the command that runs the deciding step's model run again.
void look_further(const RunReport& report, const std::vector<std::string>& report_paths,
                  std::vector<VerdictLine>& lines) {
  std::vector<std::string> paths;
  for (const std::string& p : report_paths)
    if (p.size() >= 11 && p.compare(p.size() - 11, 11, "report.html") == 0) paths.push_back(p);
  if (paths.empty() && !report_paths.empty()) paths.push_back(report_paths.front());
  std::string label = "look";
  for (const std::string& p : paths) {
    lines.push_back({label, p, true});
    label.clear();
  }
  const StepReport* step = find_step(report, report.verdict.step);
  if (step && !step->runs.empty() && !report.run_dir.empty()) {
    // The run under test: a comparison's target, else the last (a search's last trial, the workaround).
    auto target =
        std::find_if(step->runs.begin(), step->runs.end(), [](const ReportedRun& r) { return r.name == "target"; });
    const ReportedRun& run = target != step->runs.end() ? *target : step->runs.back();
    lines.push_back({label, rerun_command_line(report.run_dir, step->id, run.name, step->runs.size() > 1), true});
  }
}

// Of a run that did not end well, the last lines of its log (the verdict's log evidence), verbatim.
void log_tail(const Verdict& v, std::vector<VerdictLine>& lines) {
  constexpr size_t kLogLines = 6;
  for (const Evidence& e : v.evidence) {
    if (e.kind != "log" || !e.value.is_string()) continue;
    std::vector<std::string> log;
    std::istringstream in(e.value.get<std::string>());
    for (std::string line; std::getline(in, line);) log.push_back(line);
    std::string label = "log";
    for (size_t i = log.size() > kLogLines ? log.size() - kLogLines : 0; i < log.size(); ++i) {
      lines.push_back({label, "| " + log[i], true});
      label.clear();
    }
    return;  // the first; the report has the others
  }
}

std::string first_line(const Verdict& v) {
  const char* mark = v.category == "no_precision_problem" ? "✓ " : v.category == "inconclusive" ? "? " : "✗ ";
  std::string text = mark + v.title;
  if (!v.culprit.empty()) return text + ": " + v.culprit;
  if (v.category == "inconclusive" && !v.errored_steps.empty()) {
    const std::string& step = v.step.empty() ? v.errored_steps.front() : v.step;
    return text + ": step '" + step + "' did not give a result";
  }
  return text;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// `text` in lines of at most `width` columns; a word wider than that is cut into lines of it.
std::vector<std::string> wrapped(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  for (std::string word : words_of(text)) {
    while (display_width(word) > width) {
      if (!line.empty()) lines.push_back(std::move(line));
      line.clear();
      std::string head = shortened(word, width + 1);  // width code points, then "…"
      head.resize(head.size() - std::string("…").size());
      lines.push_back(head);
      word = word.substr(head.size());
    }
    if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// The first `limit` lines, the last one ending in "…" when some were left out.
std::vector<std::string> at_most(std::vector<std::string> lines, size_t limit, size_t width) {
  if (lines.size() <= limit) return lines;
  lines.resize(limit);
  lines.back() = shortened(lines.back() + " …", width);  // ends in "…" whether cut or not
  return lines;
}

std::string painted(const std::string& text, const char* code, bool colour) {
  return colour ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
}

}  // namespace

size_t display_width(const std::string& text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {  // CSI ... final byte
      while (i + 1 < text.size() && !(text[i + 1] >= '@' && text[i + 1] <= '~' && text[i + 1] != '[')) ++i;
      ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string verdict_sentence(const Verdict& verdict) {
  const std::string& text = verdict.summary;
  int depth = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && depth > 0) --depth;
    if (text[i] == ';' && text[i + 1] == ' ' && depth <= 1) return text.substr(0, i) + std::string(depth, ')');
  }
  return text;
}

std::string shortened(const std::string& text, size_t width) {
  if (display_width(text) <= width) return text;
  std::string out;
  for (size_t i = 0, columns = 0; i < text.size() && columns + 1 < width; ++columns) {
    const unsigned char lead = static_cast<unsigned char>(text[i]);
    const size_t length = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    out += text.substr(i, length);
    i += length;
  }
  return out + "…";
}

TerminalStyle terminal_style(int fd) {
  TerminalStyle style;
  const bool tty = isatty(fd) == 1;
  if (const char* columns = std::getenv("COLUMNS"); columns && std::atoi(columns) > 0) {
    style.width = static_cast<size_t>(std::atoi(columns));
  } else if (winsize size{}; tty && ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    style.width = size.ws_col;
  }
  style.width = std::max(style.width, kMinWidth);
  const char* no_colour = std::getenv("NO_COLOR");
  style.colour = tty && (!no_colour || !*no_colour);
  return style;
}

std::vector<VerdictLine> verdict_lines(const RunReport& report, const std::vector<std::string>& report_paths) {
  const Verdict& v = report.verdict;
  std::vector<VerdictLine> lines = {{"", first_line(v), false}};
  if (v.category == "inconclusive") {
    const StepReport* step = find_step(report, v.step);
    if (step) lines.push_back({"why", step->summary, false});
    log_tail(v, lines);
  } else {
    where_lines(report, lines);
    std::vector<std::string> facts = v.category == "no_precision_problem" ? rows_passed(report) : how_sure(report);
    if (facts.empty() && v.category == "no_precision_problem") facts.push_back(v.summary.substr(v.title.size() + 2));
    if (!facts.empty()) lines.push_back({"how sure", joined(facts, "; "), false});
  }
  if (v.category != "no_precision_problem") what_to_do(report, lines);
  std::vector<std::string> others;
  for (const std::string& id : v.failed_steps)
    if (id != v.step) others.push_back(id);
  if (!others.empty()) lines.push_back({"also fails", joined(others), false});
  std::vector<std::string> errored;
  for (const std::string& id : v.errored_steps)
    if (id != v.step) errored.push_back(id);
  if (!errored.empty()) lines.push_back({"no result", joined(errored), false});
  look_further(report, report_paths, lines);
  return lines;
}

std::string terminal_verdict(const RunReport& report, const std::vector<std::string>& report_paths,
                             const TerminalStyle& style) {
  const std::string& category = report.verdict.category;
  const char* headline = category == "no_precision_problem" ? "1;32" : category == "inconclusive" ? "1;33" : "1;31";
  const size_t width = std::max(style.width, kMinWidth);
  const std::string gutter(2 + kLabelWidth, ' ');
  const std::vector<VerdictLine> lines = verdict_lines(report, report_paths);
  std::ostringstream out;
  for (const std::string& l : at_most(wrapped(lines.front().text, width), lines.front().most_lines, width))
    out << painted(l, headline, style.colour) << "\n";
  for (auto line = lines.begin() + 1; line != lines.end(); ++line) {
    std::string label = line->label;
    label.resize(kLabelWidth, ' ');
    const std::string prefix = "  " + painted(label, "2", style.colour);
    if (line->verbatim) {
      out << prefix << line->text << "\n";
      continue;
    }
    const size_t room = width - gutter.size();
    bool first = true;
    for (const std::string& l : at_most(wrapped(line->text, room), line->most_lines, room)) {
      out << (first ? prefix : gutter) << l << "\n";
      first = false;
    }
  }
  return out.str();
}

}  // namespace diagnose
