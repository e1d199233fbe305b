#include "orchestrator/report/section_html.h"

#include <algorithm>
#include <set>

#include "orchestrator/report/markup.h"
#include "orchestrator/report/svg_plot.h"

namespace diagnose {

namespace {

using nlohmann::json;

// One row per trial, one column per candidate rule: a filled cell is a rule left on, coloured
// by the trial's outcome; the columns still filled in failing rows show where the search narrowed.
void narrowing(HtmlWriter& html, const json& trials, const std::vector<std::string>& rules,
               const std::vector<std::string>& culprits) {
  if (rules.empty() || trials.empty()) return;
  const size_t label_chars = 40;
  double longest = 0;  // rule label, drawn at 60 degrees: it rises 0.87 and runs right 0.5 of its length
  for (const std::string& rule : rules) longest = std::max(longest, svg::text_width(clip(rule, label_chars), 11));
  const int cell_w = std::max(10, std::min(40, 640 / static_cast<int>(rules.size()))), cell_h = 14, left = 150,
            top = static_cast<int>(0.87 * longest) + 20, legend = 28;
  int width = std::max(430, left + cell_w * static_cast<int>(rules.size()) + static_cast<int>(0.5 * longest) + 16);
  int height = top + cell_h * static_cast<int>(trials.size()) + legend;
  html.out << "<figure class=\"narrowing-figure\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"narrowing\" "
              "data-chart=\"bisection-narrowing\" role=\"img\" viewBox=\"0 0 "
           << width << " " << height << "\" width=\"" << width << "\" height=\"" << height
           << "\">\n<title>How the bisection narrowed</title>\n";
  for (size_t c = 0; c < rules.size(); ++c) {
    bool culprit = std::find(culprits.begin(), culprits.end(), rules[c]) != culprits.end();
    int x = left + static_cast<int>(c) * cell_w;
    if (culprit)
      html.out << "<rect class=\"culprit-column\" x=\"" << x << "\" y=\"" << top - 4 << "\" width=\"" << cell_w
               << "\" height=\"" << cell_h * static_cast<int>(trials.size()) + 8 << "\"/>\n";
    html.out << "<text" << (culprit ? " class=\"culprit-label\"" : "") << " transform=\"translate("
             << x + cell_w / 2 + 4 << " " << top - 8 << ") rotate(-60)\">" << markup_escape(clip(rules[c], label_chars))
             << (rules[c].size() > label_chars ? "<title>" + markup_escape(rules[c]) + "</title>" : "") << "</text>\n";
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    const json& t = trials[i];
    if (!t.is_object()) continue;
    std::set<std::string> off;
    for (const json& r : t.value("off", json::array()))
      if (r.is_string()) off.insert(r.get<std::string>());
    std::string outcome = t.value("outcome", "");
    std::string outcome_class = outcome == "pass" || outcome == "fail" ? outcome : "other";
    int y = top + static_cast<int>(i) * cell_h;
    html.out << "<g class=\"trial\" data-outcome=\"" << markup_escape(outcome) << "\"><title>trial " << i + 1 << " ("
             << markup_escape(t.value("phase", "")) << ", round " << t.value("round", 0) << "): " << off.size()
             << " rule(s) off → " << markup_escape(outcome) << "</title><text x=\"4\" y=\"" << y + 11 << "\">" << i + 1
             << ". " << markup_escape(clip(t.value("phase", ""), 8)) << " → " << markup_escape(outcome) << "</text>";
    for (size_t c = 0; c < rules.size(); ++c)
      html.out << "<rect class=\"cell " << (off.count(rules[c]) ? "off" : "on " + outcome_class) << "\" x=\""
               << left + static_cast<int>(c) * cell_w + 1 << "\" y=\"" << y + 1 << "\" width=\"" << cell_w - 2
               << "\" height=\"" << cell_h - 2 << "\"/>";
    html.out << "</g>\n";
  }
  int ly = height - 10;
  html.out << "<rect class=\"cell on pass\" x=\"4\" y=\"" << ly - 9
           << "\" width=\"10\" height=\"10\"/><text x=\"18\" y=\"" << ly
           << "\">rule on, trial passed</text><rect class=\"cell on fail\" x=\"150\" y=\"" << ly - 9
           << "\" width=\"10\" height=\"10\"/><text x=\"164\" y=\"" << ly
           << "\">rule on, trial failed</text><rect class=\"cell off\" x=\"290\" y=\"" << ly - 9
           << "\" width=\"10\" height=\"10\"/><text x=\"304\" y=\"" << ly << "\">rule switched off</text>\n</svg>\n"
           << "<figcaption>How the search narrowed: each row is a trial (top first), each column a candidate rule; "
              "culprit columns are highlighted.</figcaption>\n</figure>\n";
}

}  // namespace

void bisection_html(HtmlWriter& html, const std::string& path, const json& result, bool with_table) {
  const json& trials = result["trials"];
  html.out << "<div class=\"bisection\">\n<h4>Bisection: " << markup_escape(result.value("conclusion", ""))
           << "</h4>\n<p>" << markup_escape(result.value("summary", "")) << "</p>\n";
  std::vector<std::string> culprits;
  for (const json& set : result.value("culprit_sets", json::array()))
    for (const json& rule : set.value("rules", json::array()))
      if (rule.is_string()) culprits.push_back(rule.get<std::string>());
  if (!culprits.empty()) {
    html.out << "<p>Culprit rule(s):";
    for (const std::string& c : culprits) html.out << " <code class=\"culprit\">" << markup_escape(c) << "</code>";
    html.out << " · confidence " << markup_escape(result.value("confidence", ""))
             << (result.value("verified", false) ? ", verified" : "") << "</p>\n";
  }
  // Candidates: as the bisection lists them, else every rule any trial switched off.
  std::vector<std::string> rules;
  for (const json& r : result.value("candidates", json::array()))
    if (r.is_string()) rules.push_back(r.get<std::string>());
  if (rules.empty()) {
    std::set<std::string> all;
    for (const json& t : trials)
      for (const json& r : t.value("off", json::array()))
        if (r.is_string()) all.insert(r.get<std::string>());
    for (const std::string& c : culprits) all.insert(c);
    rules.assign(all.begin(), all.end());
  }
  narrowing(html, trials, rules, culprits);
  if (!with_table) {
    html.out << "<p class=\"note\">From ";
    html.anchor(path, html.link(path));
    html.out << "; the trials are listed below.</p>\n</div>\n";
    return;
  }
  json table_rows = json::array();
  for (size_t i = 0; i < trials.size(); ++i) {
    const json& t = trials[i];
    if (!t.is_object()) continue;
    json off = t.value("off", json::array());
    json row = {{"#", i + 1},
                {"round", t.value("round", json())},
                {"phase", t.value("phase", json())},
                {"rules off", off.size() == rules.size() && !rules.empty() ? json("all") : off},
                {"outcome", t.value("outcome", json())},
                {"seconds", t.value("duration_s", json())}};
    if (t.value("replayed", false)) row["replayed"] = "yes";
    if (!t.value("detail", std::string()).empty()) row["detail"] = t["detail"];
    table_rows.push_back(row);
  }
  html.out << "<h4>Trials</h4>\n";
  html.table(table_rows, "trials", {"#", "round", "phase", "rules off", "outcome", "seconds", "replayed", "detail"});
  html.out << "<p class=\"note\">From ";
  html.anchor(path, html.link(path));
  html.out << ".</p>\n</div>\n";
}

}  // namespace diagnose
