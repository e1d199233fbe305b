#include "orchestrator/report/report_html.h"

#include <algorithm>
#include <sstream>

#include "orchestrator/engine/dump_budget.h"
#include "orchestrator/engine/replay_commands.h"
#include "orchestrator/report/markup.h"
#include "orchestrator/report/section_html.h"
#include "orchestrator/report/svg_plot.h"
#include "orchestrator/report/terminal_verdict.h"

namespace diagnose {

namespace {

using nlohmann::json;
using svg::short_number;

constexpr size_t kVerdictFindings = 5;  // the rest are listed at the end of the page

const char* kStyle = R"css(
:root { --pass: #1a7f37; --fail: #cf222e; --error: #bc4c00; --skipped: #6e7781; --pending: #8250df; --ink: #1f2328; --muted: #59636e; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); margin: 0 auto; max-width: 1040px; padding: 16px 24px 48px; overflow-wrap: anywhere; }
td, th { overflow-wrap: normal; } td.long { overflow-wrap: anywhere; min-width: 14em; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 20px 0 6px; } h4 { font-size: 14px; margin: 14px 0 4px; }
.meta { color: var(--muted); margin: 0; } .meta code { color: var(--ink); }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { background: #f6f8fa; border: 1px solid var(--line); padding: 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
#verdict { border: 2px solid var(--line); border-left-width: 10px; padding: 8px 16px 12px; margin: 16px 0; border-radius: 6px; }
#verdict.no_precision_problem { border-color: var(--pass); } #verdict.inconclusive { border-color: var(--error); }
#verdict.problem { border-color: var(--fail); }
.verdict-sentence { font-size: 17px; font-weight: 600; margin: 4px 0 8px; }
dl.glance { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 8px 0; }
dl.glance dt { color: var(--muted); grid-column: 1; } dl.glance dd { margin: 0; grid-column: 2; }
dl.glance code { white-space: pre-wrap; } details > summary { cursor: pointer; color: var(--muted); }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; color: #fff; font-size: 12px; font-weight: 600; text-transform: uppercase; }
.status.pass, .status.succeeded { background: var(--pass); } .status.fail, .status.failed { background: var(--fail); }
.status.error, .status.crashed, .status.timed_out, .status.not_started, .status.missing_outputs { background: var(--error); }
.status.skipped { background: var(--skipped); } .status.pending, .status.running, .status.interrupted { background: var(--pending); }
.table-box { overflow-x: auto; margin: 6px 0 10px; }
table { border-collapse: collapse; font-size: 12px; width: 100%; }
th, td { border: 1px solid var(--line); padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.status { white-space: nowrap; }
tr.fail td { background: #ffebe9; } tr.pass td { background: #fff; } tr.crash td, tr.timeout td, tr.invalid td { background: #fff1e5; }
.step { border-top: 1px solid var(--line); padding-top: 4px; }
.note { color: var(--muted); font-size: 12px; }
ul.links { margin: 4px 0; }
ul.findings { max-height: 22em; overflow-y: auto; }
:target { scroll-margin-top: 8px; } .step:target > header, #all-findings:target h2 { background: #fff8c5; }
figure { margin: 8px 0 14px; } figcaption { color: var(--muted); font-size: 12px; }
svg.chart, svg.flowchart, svg.narrowing { max-width: 100%; height: auto; display: block; }
svg text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: var(--ink); }
svg .chart-title { font-weight: 600; font-size: 12px; } svg .note { fill: var(--muted); }
svg .frame { fill: none; stroke: #8c959f; } svg .grid { stroke: #eaeef2; }
svg .series polyline { fill: none; stroke-width: 1.4; } svg .series circle { stroke: none; }
svg .cosine polyline, svg .legend.cosine line { stroke: #0969da; } svg .cosine circle { fill: #0969da; }
svg .rel-l2 polyline, svg .legend.rel-l2 line { stroke: #8250df; } svg .rel-l2 circle { fill: #8250df; }
svg .max-rel polyline, svg .legend.max-rel line { stroke: #bf8700; stroke-dasharray: 4 2; } svg .max-rel circle { fill: #bf8700; }
svg .series circle.fail { fill: var(--fail); } svg .legend line { stroke-width: 3; }
svg .marker line { stroke-width: 1.5; } svg .marker.first-divergence line { stroke: var(--fail); stroke-dasharray: 5 3; }
svg .marker.first-divergence text { fill: var(--fail); font-weight: 600; }
svg .marker.source-op line { stroke: #bc4c00; } svg .marker.source-op text { fill: #bc4c00; }
svg .box rect { stroke: #8c959f; stroke-width: 1.2; fill: #fff; }
svg .box.pass rect { fill: #dafbe1; stroke: var(--pass); } svg .box.fail rect { fill: #ffebe9; stroke: var(--fail); stroke-width: 2.5; }
svg .box.error rect { fill: #fff1e5; stroke: var(--error); stroke-width: 2.5; }
svg .box.skipped rect { fill: #f6f8fa; stroke: var(--skipped); stroke-dasharray: 5 3; } svg .box.pending rect { fill: #fbefff; stroke: var(--pending); }
svg .box .id { font-weight: 600; font-size: 12px; } svg .box .kind, svg .when { fill: var(--muted); }
svg .arrow { stroke: #57606a; stroke-width: 1.4; fill: none; marker-end: url(#arrowhead); }
svg .cell.on.pass { fill: var(--pass); } svg .cell.on.fail { fill: var(--fail); } svg .cell.on.other { fill: var(--error); }
svg .cell.off { fill: #eaeef2; } svg .culprit-column { fill: #fff8c5; } svg .culprit-label { font-weight: 700; fill: var(--fail); }
@page { size: A4; margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  figure, table, .step > header, #verdict, svg { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
  ul.links a[href]::after { content: " (" attr(href) ")"; font-size: 8pt; color: var(--muted); }
  pre { white-space: pre-wrap; }
  ul.findings { max-height: none; overflow: visible; }
  .table-box { overflow: visible; }
}
)css";

class Page {
 public:
  explicit Page(const RunReport& report) : report_(report), verdict_(report.verdict), html_(out_, report.run_dir) {}

  std::string render() {
    out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         << "<title>diagnose: " << markup_escape(report_.workflow_name) << " — " << markup_escape(verdict_.title)
         << "</title>\n"
         << "<style>" << kStyle << "</style>\n</head>\n<body>\n";
    header();
    verdict();
    flowchart_html(html_, report_.steps);
    dump_budget();
    out_ << "<h2 id=\"steps\">Steps</h2>\n";
    for (const StepReport& step : report_.steps) step_section(step);
    if (verdict_.findings.size() > kVerdictFindings) {
      out_ << "<section id=\"all-findings\">\n<h2>All findings of the verdict (" << verdict_.findings.size()
           << ")</h2>\n";
      html_.findings(verdict_.findings);
      out_ << "</section>\n";
    }
    out_ << "</body>\n</html>\n";
    return out_.str();
  }

 private:
  void header() {
    out_ << "<header>\n<h1>diagnose report: " << markup_escape(report_.workflow_name)
         << "</h1>\n<p class=\"meta\">run <code>" << markup_escape(report_.run_dir)
         << "</code> · workflow <a href=\"workflow.yaml\"><code>" << markup_escape(report_.workflow_path)
         << "</code></a> · started " << markup_escape(cell_text(report_.started)) << " · "
         << (report_.finished.is_null() ? std::string("not finished")
                                        : "finished " + markup_escape(cell_text(report_.finished)))
         << (report_.duration_s > 0 ? " (" + short_number(report_.duration_s) + " s)" : std::string())
         << " · exit code <strong id=\"exit-code\">" << verdict_.exit_code << "</strong></p>\n</header>\n";
  }

  void dump_budget() {
    if (!report_.dump_budget.is_object()) return;
    out_ << "<section id=\"dump-budget\">\n<h2>Dump budget</h2>\n<p>"
         << markup_escape(dump_budget_text(report_.dump_budget)) << "</p>\n";
    const json left_out = report_.dump_budget.value("left_out", json::array());
    if (!left_out.empty()) html_.table(left_out, "left-out");
    out_ << "</section>\n";
  }

  void verdict() {
    std::string kind = verdict_.category == "no_precision_problem" || verdict_.category == "inconclusive"
                           ? verdict_.category
                           : "problem";
    out_ << "<section id=\"verdict\" class=\"" << kind << "\" data-category=\"" << markup_escape(verdict_.category)
         << "\">\n"
         << "<h2>Verdict: " << markup_escape(verdict_.title) << "</h2>\n<p class=\"verdict-sentence\">"
         << markup_escape(verdict_sentence(verdict_)) << "</p>\n";
    glance();
    if (!verdict_.step.empty())
      out_ << "<p>Decided by step <a href=\"#step-" << markup_escape(verdict_.step) << "\">"
           << markup_escape(verdict_.step) << "</a>"
           << (verdict_.culprit.empty()
                   ? ""
                   : "; culprit <code class=\"culprit\">" + markup_escape(verdict_.culprit) + "</code>")
           << ".</p>\n";
    html_.findings(verdict_.findings, kVerdictFindings);
    if (size_t more = verdict_.findings.size() > kVerdictFindings ? verdict_.findings.size() - kVerdictFindings : 0)
      out_ << "<p class=\"more-findings\"><a href=\"#all-findings\">" << more << " more finding"
           << (more == 1 ? "" : "s") << "</a> (" << verdict_.findings.size() << " in all)</p>\n";
    if (!verdict_.evidence.empty()) {
      out_ << "<h4>Evidence</h4>\n";
      html_.evidence(verdict_.evidence);
    }
    if (!verdict_.reproduce.empty()) {
      out_ << "<details class=\"reproduce\"><summary>Reproduce: the commands with their full environment</summary>\n";
      html_.commands("Reproduce", verdict_.reproduce);
      out_ << "</details>\n";
    }
    out_ << "</section>\n";
  }

  // The terminal's verdict block (terminal_verdict.h) after its first line, which the heading and
  // the sentence above say.
  void glance() {
    const std::vector<VerdictLine> lines = verdict_lines(report_, {});
    if (lines.size() < 2) return;
    out_ << "<dl class=\"glance\">\n";
    for (auto line = lines.begin() + 1; line != lines.end(); ++line) {
      if (!line->label.empty()) out_ << "<dt>" << markup_escape(line->label) << "</dt>";
      out_ << "<dd>" << (line->verbatim ? "<code>" + markup_escape(line->text) + "</code>" : markup_escape(line->text))
           << "</dd>\n";
    }
    out_ << "</dl>\n";
  }

  void runs(const StepReport& step) {
    if (step.runs.empty()) return;
    out_ << "<div class=\"table-box\"><table "
            "class=\"runs\">\n<tr><th>run</th><th>status</th><th>exit</th><th>seconds</th><th>attempts</th>"
            "<th>files</th><th>why</th><th>run it again</th></tr>\n";
    for (const ReportedRun& r : step.runs) {
      std::string status = status_class(run_status_name(r.status));
      out_ << "<tr><td>" << markup_escape(r.name);
      if (!r.from_step.empty())
        out_ << " <span class=\"note\">shared with step " << markup_escape(r.from_step) << "</span>";
      out_ << "</td><td><span class=\"status " << status << "\">" << status << "</span></td><td class=\"num\">"
           << (r.exit_code ? std::to_string(*r.exit_code)
               : r.signal  ? "signal " + std::to_string(*r.signal)
                           : "")
           << "</td><td class=\"num\">" << (r.finished.is_null() ? "" : short_number(r.duration_s))
           << "</td><td class=\"num\">" << r.attempts << "</td><td>";
      std::vector<std::pair<std::string, std::string>> files = {{"stdout", r.stdout_path}, {"stderr", r.stderr_path}};
      if (r.dump_kept) files.push_back({"dump", r.dump_dir});
      bool first = true;
      for (const auto& [name, path] : files) {
        if (path.empty()) continue;
        if (!first) out_ << " · ";
        html_.anchor(path, name);
        first = false;
      }
      out_ << "</td><td>" << markup_escape(r.error) << "</td><td class=\"long\"><code class=\"rerun\">"
           << markup_escape(rerun_command_line(report_.run_dir, step.id, r.name, step.runs.size() > 1)) << "</code>";
      if (!r.argv.empty())
        out_ << "<details><summary>environment</summary><pre>"
             << markup_escape(replay_command_line(r.cwd, r.env, r.argv)) << "</pre></details>";
      out_ << "</td></tr>\n";
    }
    out_ << "</table></div>\n";
  }

  void metrics_list(const StepReport& step) {
    if (!step.metrics.is_object() || step.metrics.empty()) return;
    out_ << "<p class=\"metrics\">";
    bool first = true;
    for (const auto& [key, value] : step.metrics.items()) {
      bool table_like =
          value.is_array() && std::any_of(value.begin(), value.end(), [](const json& v) { return v.is_structured(); });
      if (value.is_object() || table_like || (value.is_array() && value.size() > 8)) continue;
      out_ << (first ? "" : " · ") << "<code>" << markup_escape(key) << "</code> = " << markup_escape(cell_text(value));
      first = false;
    }
    out_ << "</p>\n";
  }

  void step_section(const StepReport& step) {
    std::string status = status_class(step_status_name(step.status));
    out_ << "<section class=\"step\" id=\"step-" << markup_escape(step.id) << "\" data-kind=\""
         << markup_escape(step.kind) << "\" data-status=\"" << status << "\">\n<header><h3>" << markup_escape(step.id)
         << " <span class=\"note\">(" << markup_escape(step.kind) << ")</span> <span class=\"status " << status << "\">"
         << status << "</span></h3>\n<p>" << markup_escape(step.summary) << "</p></header>\n";
    metrics_list(step);
    html_.findings(step.findings);
    runs(step);
    for (const ReportSection& section : step.sections) {
      switch (section.kind) {
        case ReportSection::Kind::Compare: compare_html(html_, section.path, section.document); break;
        case ReportSection::Kind::Bisection:
          bisection_html(html_, section.path, section.document, !has_trial_table(step));
          break;
        case ReportSection::Kind::Trend: trend_html(html_, section.path, section.document); break;
      }
    }
    html_.evidence(step.evidence);
    if (!step.reproduce.empty()) {
      out_ << "<details class=\"replay\"><summary>Replay: the commands with their full environment</summary>\n";
      html_.commands("Replay", step.reproduce);
      out_ << "</details>\n";
    }
    out_ << "</section>\n";
  }

  // A step that lists its trials as evidence already (fusion_bisect does) needs no second table.
  static bool has_trial_table(const StepReport& step) {
    return std::any_of(step.evidence.begin(), step.evidence.end(), [](const Evidence& e) {
      return e.kind == "table" && e.name.find("trial") != std::string::npos;
    });
  }

  const RunReport& report_;
  const Verdict& verdict_;
  std::ostringstream out_;
  HtmlWriter html_;
};

}  // namespace

std::string report_html(const RunReport& report) { return Page(report).render(); }

}  // namespace diagnose
