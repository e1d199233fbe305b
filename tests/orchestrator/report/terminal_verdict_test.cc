#include "orchestrator/report/terminal_verdict.h"

#include <gtest/gtest.h>

#include <sstream>

#include "orchestrator/engine/verdict.h"
#include "orchestrator/workflow/verdict_categories.h"

namespace diagnose {
namespace {

// At 80 columns and more; 60 wraps more.
constexpr size_t kMaxLines = 14, kMaxNarrowLines = 18;
const char* kPlace =
    "module L.args.0.model.layers.1.self_attn.k_proj modeling_qwen2.py:200 `key_states = "
    "self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)`";

// A run that `category` decides, with the long summary and lists a real step leaves.
RunReport report_deciding(const std::string& category) {
  StepResult compare;
  compare.id = "graph_compare";
  compare.kind = "graph_dump_compare";
  // the categories that rank below the compare's own are the compare's
  compare.category =
      category == "precision_problem" || category == "unconfirmed_divergence" ? category : "localized_op_defect";
  compare.status = StepStatus::Fail;
  compare.summary =
      "the compiled graph diverges from eager: 109 of 204 judged rows fail (calls 1–5 of 5 diverge (first at call 1: "
      "cat_3-aten.cat.default)); judged 204 of 280 rows; 76 not comparable: no golden tensor; 1765 record(s) of one "
      "side unmatched; cat_3-aten.cat.default: fused FX nodes view_24, view_25, cat_3; from " +
      std::string(kPlace) + ", " + kPlace;
  compare.metrics = {{"culprit", "cat_3-aten.cat.default"},
                     {"failing_ranks", {0, 1}},
                     {"culprit_nodes", {"view_24", "view_25", "cat_3"}},
                     {"culprit_sources", {kPlace, "module L.args.0.model.layers.1 modeling_qwen2.py:180 `x = y`"}}};
  compare.findings = {
      {"first failing op rank 0 call 1: cat_3-aten.cat.default (rmse to float64 0.52, 8600000x "
       "eager's 6e-08); fused FX nodes view_24, view_25, cat_3",
       "cat_3-aten.cat.default"}};
  RunRecord golden, target;
  golden.name = "golden";
  target.name = "target";
  compare.runs = {golden, target};

  State state;
  state.run_dir = "/home/user/project/runs/20261206T023000Z-qwen2_decode";
  StepResult passed;
  passed.id = "eager";
  passed.status = StepStatus::Pass;
  passed.summary = "eager on the device matches the CPU";
  state.steps = {passed, compare};
  if (category == "inconclusive") {
    state.steps.back().status = StepStatus::Error;
    state.steps.back().summary = "the target run crashed (signal 9) after 12.0 s: " + std::string(300, 'x');
  } else if (category != "no_precision_problem" && category != "localized_op_defect") {
    StepResult deciding;
    deciding.id = "decider";
    deciding.kind = "some_kind";
    deciding.category = category;
    deciding.status = StepStatus::Fail;
    deciding.summary = "a " + category + " found after 17 trial runs; " + std::string(400, 'y');
    deciding.metrics = {{"culprit", category == "state_defect" ? "state.past_key_values.1" : "GeluFusionPass"},
                        {"trials", 17},
                        {"verified", true},
                        {"confidence", "high"}};
    RunRecord trial;
    trial.name = "t1";
    deciding.runs = {trial};
    if (category == "fusion_defect") {
      deciding.metrics["knob"] = "fusion_switch_file";
      deciding.evidence = {{"file", "workaround: switch file turning only the culprits off",
                            state.run_dir + "/steps/decider/fusion_switch.json", nullptr}};
    }
    if (category == "state_defect") deciding.metrics["culprit_sources"] = {kPlace};
    state.steps.push_back(deciding);
  } else if (category == "no_precision_problem") {
    state.steps.back().status = StepStatus::Pass;
    state.steps.back().summary = "all pass; judged 204 of 204 rows";
  }
  return run_report(state, compute_verdict({}, {}, state));
}

std::vector<std::string> block_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> category_names() {
  std::vector<std::string> names;
  for (const VerdictCategory& c : verdict_categories()) names.push_back(c.name);
  return names;
}

TEST(TerminalVerdict, EveryCategoryIsAShortBlockWithinTheWidth) {
  const std::vector<std::string> paths = {"/home/user/project/runs/20261206T023000Z-qwen2_decode/report.md",
                                          "/home/user/project/runs/20261206T023000Z-qwen2_decode/report.html"};
  for (const std::string& category : category_names()) {
    const RunReport report = report_deciding(category);
    ASSERT_EQ(report.verdict.category, category);
    for (size_t width : {60, 80, 120}) {
      SCOPED_TRACE(category + " at " + std::to_string(width));
      const std::string text = terminal_verdict(report, paths, {width, false});
      const std::vector<std::string> lines = block_lines(text);
      EXPECT_LE(lines.size(), width < 80 ? kMaxNarrowLines : kMaxLines) << text;
      EXPECT_NE(lines.front().find(report.verdict.title), std::string::npos) << text;
      EXPECT_EQ(text.find('\033'), std::string::npos);
      std::vector<std::string> verbatim;
      for (const VerdictLine& line : verdict_lines(report, paths))
        if (line.verbatim) verbatim.push_back(line.text);
      for (const std::string& line : lines) {
        bool quoted = std::any_of(verbatim.begin(), verbatim.end(),
                                  [&](const std::string& v) { return line.find(v) != std::string::npos; });
        if (!quoted) EXPECT_LE(display_width(line), width) << line;
      }
      // The culprit's place in the code once, with its code line; the lists only counted.
      const size_t places = category == "inconclusive" || category == "no_precision_problem" ? 0 : 1;
      EXPECT_EQ(occurrences(text, "modeling_qwen2.py:200"), places) << text;
      EXPECT_EQ(occurrences(text, "key_states = self.k_proj"), places) << text;
      EXPECT_EQ(occurrences(text, "view_25"), 0u) << text;
      EXPECT_EQ(occurrences(text, "report.html"), 1u) << text;
      if (category != "no_precision_problem") EXPECT_EQ(occurrences(text, "diagnose rerun "), 1u) << text;
    }
  }
}

// A tiny Phi under a user backend whose pass scaled a LayerNorm's output: graph compare's first
// failing row (q_proj, the LayerNorm's consumer) was rejected by its intervention run and the
// subgraph search decided; "where" must not show the rejected row's place.
TEST(TerminalVerdict, ARejectedCandidatesPlaceIsNotWhere) {
  RunReport report = report_deciding("subgraph_defect");
  for (StepReport& step : report.steps)
    if (step.id == "graph_compare") {
      step.metrics["culprit"] = nullptr;
      step.metrics["confirmation"] = {{"outcome", "rejected"}, {"text", "rejected: with `cat_3` run eagerly ..."}};
    }
  const std::string text = terminal_verdict(report, {}, {200, false});
  EXPECT_EQ(text.find("modeling_qwen2.py:200"), std::string::npos) << text;
  EXPECT_EQ(text.find("the error starts"), std::string::npos) << text;
  EXPECT_NE(text.find("109 of 204 judged rows fail"), std::string::npos) << text;
  EXPECT_NE(text.find("rejected: with `cat_3` run eagerly"), std::string::npos) << text;
}

TEST(TerminalVerdict, SaysHowSureWithTheNumbersThatDecided) {
  const std::string text = terminal_verdict(report_deciding("localized_op_defect"), {}, {200, false});
  EXPECT_NE(text.find("✗ Defect localised to an op, not caused by fusion: cat_3-aten.cat.default"), std::string::npos)
      << text;
  EXPECT_NE(text.find("109 of 204 judged rows fail"), std::string::npos) << text;
  EXPECT_NE(text.find("rmse to float64 0.52, 8600000x eager's 6e-08"), std::string::npos) << text;
  EXPECT_NE(text.find("calls 1–5 of 5 diverge"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks 0, 1"), std::string::npos) << text;
  EXPECT_NE(text.find("1 more place(s) in the code, 3 fused FX nodes: in the report"), std::string::npos) << text;
  EXPECT_NE(text.find("diagnose rerun /home/user/project/runs/20261206T023000Z-qwen2_decode graph_compare target"),
            std::string::npos)
      << text;

  const std::string fusion = terminal_verdict(report_deciding("fusion_defect"), {}, {200, false});
  EXPECT_NE(fusion.find("17 trial runs, verified, confidence high"), std::string::npos) << fusion;
  EXPECT_NE(fusion.find("what to do GeluFusionPass off through fusion_switch_file works around it:\n             "
                        "/home/user/project/runs/20261206T023000Z-qwen2_decode/steps/decider/fusion_switch.json\n"),
            std::string::npos)
      << fusion;
  EXPECT_NE(fusion.find("the error starts at cat_3-aten.cat.default (step graph_compare)"), std::string::npos)
      << fusion;
  EXPECT_NE(fusion.find("where      modeling_qwen2.py:200 module L.args.0.model.layers.1.self_attn.k_proj"),
            std::string::npos)
      << fusion;
  EXPECT_NE(fusion.find("also fails graph_compare"), std::string::npos) << fusion;
}

TEST(TerminalVerdict, ColourOnlyWhenAsked) {
  const RunReport report = report_deciding("state_defect");
  const std::string text = terminal_verdict(report, {}, {80, true});
  EXPECT_EQ(text.rfind("\033[1;31m✗ ", 0), 0u) << text;
  for (const std::string& line : block_lines(text))
    if (line.find("modeling_qwen2.py:200 `") == std::string::npos && line.find("diagnose rerun") == std::string::npos &&
        line.find("key_states") == std::string::npos)
      EXPECT_LE(display_width(line), 80u) << line;
}

TEST(TerminalVerdict, DisplayWidthCountsCharactersNotBytesOrEscapes) {
  EXPECT_EQ(display_width("calls 1–5"), 9u);
  EXPECT_EQ(display_width("\033[1;31m✗ x\033[0m"), 3u);
  EXPECT_EQ(shortened("abcdef", 4), "abc…");
  EXPECT_EQ(shortened("ab–cdef", 4), "ab–…");
  EXPECT_EQ(shortened("abc", 4), "abc");
}

}  // namespace
}  // namespace diagnose
