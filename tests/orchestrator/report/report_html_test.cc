// report.html from real results: the comparison core on the bundled example dumps, a real
// bisection, a trend document. The browser-side checks are in tests/python/report.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "compare/compare.h"
#include "compare/report.h"
#include "orchestrator/bisect/bisector.h"
#include "orchestrator/ci/history.h"
#include "orchestrator/report/markup.h"
#include "orchestrator/report/report_html.h"
#include "orchestrator/report/svg_plot.h"
#include "orchestrator/report/terminal_verdict.h"
#include "tests/support/e2e_helpers.h"

namespace diagnose {
namespace {

using namespace testing_support;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReportHtml : public testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = scratch_ / "runs/20261129-120000-example";
    state_.run_dir = run_dir_;
    state_.workflow_name = "example <&>";
    state_.workflow_path = "workflow.yaml";
    state_.started = 1000;
    state_.finished = 1012;
  }

  // A compare step whose result.json the comparison core wrote (golden vs target example dumps).
  StepResult compare_step(const std::string& golden, const std::string& target) {
    std::string examples = source_dir() + "/examples/dumps/";
    compare::CompareOptions options;
    options.golden_path = examples + golden;
    options.my_path = examples + target;
    options.tolerances = compare::Tolerances::defaults();
    options.threads = 1;
    compare::CompareResult compared = compare::run_compare(options);
    std::string out = run_dir_ + "/steps/compare/compare";
    fs::create_directories(out);
    std::vector<std::string> csv = compare::write_csv_reports(compared, out);
    std::ofstream(out + "/result.json") << compare::result_to_json(compared, options, csv).dump(2);
    StepResult s;
    s.id = "compare";
    s.kind = "compare";
    s.status = compared.summary.failed ? StepStatus::Fail : StepStatus::Pass;
    s.summary = std::to_string(compared.summary.failed) + " failed";
    for (const std::string& c : csv) s.evidence.push_back({"file", "comparison table", c, nullptr});
    s.evidence.push_back({"file", "comparison result (JSON)", out + "/result.json", nullptr});
    s.evidence.push_back(
        {"table", "worst rows", "", nlohmann::json::array({{{"op", "add-aten.add.Tensor"}, {"verdict", "fail"}}})});
    s.reproduce.push_back("diagnose compare -gp " + options.golden_path + " -mp " + options.my_path);
    if (compared.summary.failed) s.metrics["first_failing_op"] = compared.summary.divergences.front().first_failing_op;
    return s;
  }

  TempDir scratch_;
  std::string run_dir_;
  State state_;
};

TEST_F(ReportHtml, ADiagnosedDefectShowsVerdictFlowchartPlotsAndWorstRows) {
  StepResult run;
  run.id = "runs";
  run.kind = "run";
  run.status = StepStatus::Pass;
  RunRecord r;
  r.name = "graph";
  r.status = RunStatus::Succeeded;
  r.exit_code = 0;
  r.argv = {"python", "model.py"};
  r.env = {{"MODEL_SEED", "1"}};
  r.cwd = "/work";
  r.stdout_path = run_dir_ + "/steps/runs/graph/stdout.log";
  r.stderr_path = run_dir_ + "/steps/runs/graph/stderr.log";
  run.runs.push_back(r);
  state_.steps.push_back(run);
  state_.steps.push_back(compare_step("fx", "ge"));
  StepResult skipped;
  skipped.id = "never";
  skipped.kind = "assert";
  skipped.status = StepStatus::Skipped;
  state_.steps.push_back(skipped);
  Verdict verdict = compute_verdict({}, {}, state_);
  std::string html = report_html(run_report(state_, verdict));

  EXPECT_NE(html.find("<p class=\"verdict-sentence\">" + markup_escape(verdict_sentence(verdict)) + "</p>"),
            std::string::npos);
  // Then the terminal's block; each run's one command, its environment disclosed.
  EXPECT_NE(html.find("<dl class=\"glance\">\n<dt>how sure</dt><dd>"), std::string::npos) << html;
  EXPECT_NE(html.find("<code class=\"rerun\">diagnose rerun " + run_dir_ +
                      " runs</code><details><summary>"
                      "environment</summary><pre>cd /work &amp;&amp; MODEL_SEED=1 python model.py</pre></details>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("add-aten.add.Tensor"), std::string::npos);
  EXPECT_NE(html.find("example &lt;&amp;&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("example <&>"), std::string::npos);
  // Flowchart: one box per step with its status.
  EXPECT_NE(html.find("data-step=\"runs\" data-status=\"pass\""), std::string::npos);
  EXPECT_NE(html.find("data-step=\"compare\" data-status=\"fail\""), std::string::npos);
  EXPECT_NE(html.find("data-step=\"never\" data-status=\"skipped\""), std::string::npos);
  // Per-op plots with the first divergence and the source op marked, on a log scale.
  EXPECT_EQ(count(html, "data-chart=\"compare-cosine\""), 1u);
  EXPECT_EQ(count(html, "data-chart=\"compare-relative-error\""), 1u);
  EXPECT_NE(html.find("first divergence: add-aten.add.Tensor (source op)"), std::string::npos);
  EXPECT_NE(html.find(">1e-"), std::string::npos);
  EXPECT_NE(html.find("<circle r=\"3\""), std::string::npos);
  EXPECT_NE(html.find("class=\"fail\""), std::string::npos);
  EXPECT_NE(html.find("Worst rows"), std::string::npos);
  EXPECT_NE(html.find("rank0/Mul_9"), std::string::npos);  // unmatched
  // Links relative to the run directory; nothing fetched from anywhere.
  EXPECT_NE(html.find("href=\"steps/compare/compare/result.json\""), std::string::npos);
  EXPECT_NE(html.find("href=\"steps/runs/graph/stderr.log\""), std::string::npos);
  EXPECT_EQ(html.find("href=\"" + run_dir_), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_NE(html.find("@media print"), std::string::npos);
  EXPECT_NE(html.find("<pre class=\"replay\">diagnose compare -gp"), std::string::npos);
}

TEST_F(ReportHtml, APassingRunHasNoDivergenceMarkers) {
  state_.steps.push_back(compare_step("fx", "fx"));
  Verdict verdict = compute_verdict({}, {}, state_);
  ASSERT_EQ(verdict.category, "no_precision_problem");
  std::string html = report_html(run_report(state_, verdict));
  EXPECT_NE(html.find("id=\"verdict\" class=\"no_precision_problem\""), std::string::npos);
  EXPECT_EQ(count(html, "data-chart=\"compare-cosine\""), 1u);
  EXPECT_EQ(html.find("first divergence:"), std::string::npos);
  EXPECT_EQ(html.find("Worst rows"), std::string::npos);
}

TEST_F(ReportHtml, BisectionTrialsAndTheNarrowingPicture) {
  using namespace bisect;
  std::vector<std::string> rules;
  for (int i = 0; i < 12; ++i) rules.push_back("Rule" + std::to_string(i));
  FunctionOracle oracle([](const Config& off) {
    TrialOutcome o;
    o.outcome = std::find(off.begin(), off.end(), "Rule7") == off.end() ? Outcome::Fail : Outcome::Pass;
    return o;
  });
  Result result = bisect::bisect(rules, oracle, Options{});
  ASSERT_EQ(result.conclusion, Conclusion::CulpritsFound);
  write_text(run_dir_ + "/steps/fusion/bisection.json", result.to_json().dump(2));
  StepResult step;
  step.id = "fusion";
  step.kind = "fusion_bisect";
  step.status = StepStatus::Fail;
  step.summary = "culprit Rule7";
  step.metrics["culprit"] = "Rule7";
  state_.steps.push_back(step);
  std::string html = report_html(run_report(state_, compute_verdict({}, {}, state_)));
  EXPECT_NE(html.find("data-chart=\"bisection-narrowing\""), std::string::npos);
  EXPECT_NE(html.find("<code class=\"culprit\">Rule7</code>"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"culprit-column\""), 1u);
  EXPECT_EQ(count(html, "<g class=\"trial\""), result.trials.size());
  EXPECT_EQ(count(html, "<table class=\"trials\">"), 1u);
  EXPECT_NE(html.find("href=\"steps/fusion/bisection.json\""), std::string::npos);
}

TEST_F(ReportHtml, AGateRunShowsTheTrend) {
  std::vector<TrendPoint> points;
  for (int i = 0; i < 4; ++i) {
    TrendPoint p;
    p.run_dir = "/x/runs/r" + std::to_string(i);
    p.model_version = "v" + std::to_string(i);
    p.metrics.output = "output.0";
    p.metrics.relative_l2 = i == 3 ? 0.1 : 1e-7;
    p.metrics.cosine_similarity = i == 3 ? 0.99 : 1.0;
    p.metrics.passed = i != 3;
    points.push_back(p);
  }
  write_text(run_dir_ + "/steps/gate/gate/trend.json", trend_json(points, "", "/x/history.sqlite").dump());
  StepResult gate;
  gate.id = "gate";
  gate.kind = "gate";
  gate.status = StepStatus::Fail;
  state_.steps.push_back(gate);
  std::string html = report_html(run_report(state_, compute_verdict({}, {}, state_)));
  EXPECT_EQ(count(html, "data-chart=\"history-trend\""), 1u);
  EXPECT_NE(html.find(">v3</text>"), std::string::npos);
  EXPECT_NE(html.find("<table class=\"trend-table\">"), std::string::npos);
}

TEST_F(ReportHtml, TheVerdictShowsAHandfulOfFindingsAndLinksToTheRest) {
  state_.steps.push_back(compare_step("fx", "ge"));
  Verdict verdict = compute_verdict({}, {}, state_);
  verdict.findings.clear();
  for (int i = 0; i < 300; ++i) verdict.findings.push_back({"not matched: rank0/Op_" + std::to_string(i), ""});
  std::string html = report_html(run_report(state_, verdict));
  size_t verdict_start = html.find("<section id=\"verdict\""), verdict_end = html.find("</section>", verdict_start);
  std::string box = html.substr(verdict_start, verdict_end - verdict_start);
  EXPECT_EQ(count(box, "<li>not matched"), 5u);
  EXPECT_NE(box.find("<a href=\"#all-findings\">295 more findings</a> (300 in all)"), std::string::npos);
  size_t all = html.find("<section id=\"all-findings\">");
  ASSERT_NE(all, std::string::npos);
  EXPECT_EQ(count(html.substr(all), "<li>not matched"), 300u);
  EXPECT_NE(html.find("Op_299"), std::string::npos);
}

TEST_F(ReportHtml, FlowchartConditionsAreWrappedIntoTheirBoxNotCut) {
  std::string condition = "steps.graph_compare.status == fail and steps.graph_compare.failed_outputs != 0";
  write_text(
      run_dir_ + "/resolved.json",
      nlohmann::json({{"steps", {{{"id", "a_rather_long_step_identifier_name"}}, {{"id", "b"}, {"when", condition}}}}})
          .dump());
  for (const char* id : {"a_rather_long_step_identifier_name", "b"}) {
    StepResult s;
    s.id = id;
    s.kind = "assert";
    s.status = StepStatus::Pass;
    state_.steps.push_back(s);
  }
  std::string html = report_html(run_report(state_, compute_verdict({}, {}, state_)));
  std::regex line("<text class=\"(id|when)\" x=\"[0-9]+\" y=\"[0-9]+\">([^<]*)</text>");
  std::string ids, when;
  for (std::sregex_iterator it(html.begin(), html.end(), line), end; it != end; ++it) {
    std::string text = (*it)[2];
    EXPECT_LE(svg::text_width(text, (*it)[1] == "id" ? 13 : 11), 180) << text;
    ((*it)[1] == "id" ? ids : when) += ((*it)[1] == "id" || when.empty() ? "" : " ") + text;
  }
  auto spaceless = [](std::string t) {
    t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
    return t;
  };
  EXPECT_EQ(ids, "a_rather_long_step_identifier_nameb");
  EXPECT_EQ(spaceless(when), spaceless("when " + condition));               // a word wider than the box is split
  EXPECT_NE(html.find(">steps.graph_compare.status<"), std::string::npos);  // the others are not
  EXPECT_EQ(html.find("…"), std::string::npos);
}

TEST(SvgChart, ShortNumbersNeverRoundOntoAWholeNumberTheyAreNot) {
  EXPECT_EQ(svg::short_number(0.9999662428), "0.99997");
  EXPECT_EQ(svg::short_number(-0.999999), "-0.999999");
  EXPECT_EQ(svg::short_number(1.0000001), "1.0000001");
  EXPECT_EQ(svg::short_number(1.0), "1");
  EXPECT_EQ(svg::short_number(0.03642129898), "0.03642");
  EXPECT_EQ(svg::short_number(12345.6), "1.235e+04");
  EXPECT_EQ(svg::short_number(7.153e-07), "7.153e-07");
}

TEST(SvgChart, MarkerLabelsCloseTogetherTakeSeparateLines) {
  svg::Chart c;
  c.title = "t";
  c.series = {{"s", "cosine", {{0, 1, "", ""}, {100, 2, "", ""}}, true}};
  c.markers = {{50, "first divergence: layer.0/aten.mul.Tensor#0", "first-divergence"},
               {51, "source op: layer.0/aten.add.Tensor#0", "source-op"},
               {100, "source op: the last op, near the right edge", "source-op"},
               {0, "first divergence: " + std::string(200, 'x'), "first-divergence"}};
  std::string out = svg::chart(c);
  std::regex label("<g class=\"marker [^\"]*\">.*?<text x=\"([0-9.]+)\" y=\"([0-9.]+)\"( text-anchor=\"end\")?>");
  std::vector<std::smatch> labels;
  for (std::sregex_iterator it(out.begin(), out.end(), label), end; it != end; ++it) labels.push_back(*it);
  ASSERT_EQ(labels.size(), 4u);
  EXPECT_NE(labels[0][2], labels[1][2]);        // one below the other
  EXPECT_TRUE(labels[2][3].matched);            // drawn left of its line
  EXPECT_LE(std::stod(labels[2][1]), c.width);  // and so inside the chart
  std::string longest = labels[3].suffix().str();
  longest = longest.substr(0, longest.find("</text>"));
  EXPECT_EQ(longest.substr(longest.size() - 3), "…");  // as much as fits; all of it in the <title>
  EXPECT_LE(std::stod(labels[3][1]) + svg::text_width(longest, 11), c.width);
  EXPECT_NE(out.find("<title>first divergence: " + std::string(200, 'x') + "</title>"), std::string::npos);
}

TEST(SvgChart, LogScaleKeepsZeroAndInfinityOnTheChart) {
  svg::Chart c;
  c.title = "t";
  c.log_y = true;
  c.series = {{"s",
               "cosine",
               {{0, 0, "zero", ""}, {1, 1e-3, "small", ""}, {2, INFINITY, "inf", "fail"}, {3, NAN, "nan", ""}},
               true}};
  std::string out = svg::chart(c);
  EXPECT_EQ(count(out, "<circle"), 3u);  // NaN has no place; zero sits on the floor, inf on top
  EXPECT_NE(out.find(">1e-12<"), std::string::npos);
  EXPECT_EQ(out.find("nan\""), std::string::npos);
  std::regex number_attribute("c[xy]=\"(-?[0-9.]+)\"");
  for (std::sregex_iterator it(out.begin(), out.end(), number_attribute), end; it != end; ++it) {
    double v = std::stod((*it)[1]);
    EXPECT_GE(v, 0);
    EXPECT_LE(v, c.width);
  }
}

}  // namespace
}  // namespace diagnose
