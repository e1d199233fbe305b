// steps/bisection/bisection_knobs.h: the fired-rule reports (GE's fusion_result.json, the plugin's
// status.json), the switch file sections a knob learns and keeps in the trial log, and the
// switch files it writes.
#include <gtest/gtest.h>

#include "orchestrator/bisect/driver.h"
#include "steps/bisection/bisection_knobs.h"
#include "tests/support/files.h"

namespace diagnose {
namespace {

using testing_support::TempDir;
using testing_support::write_text;

// The user's pass of Inductor's pre-grad slot as the plugin's status.json describes it.
std::map<std::string, InductorRule> rules_with_user_pass() {
  const nlohmann::json status = {
      {"inductor_rules",
       {{"rules",
         {{"pre_grad_passes", {{"config", "use_pre_grad_passes"}, {"off_value", false}}},
          {"split_reductions", {{"config", "split_reductions"}, {"off_value", false}}},
          {"pre_grad_custom_pass",
           {{"config", "pre_grad_custom_pass"}, {"off_value", nullptr}, {"gate", "pre_grad_passes"}}},
          {"post_grad_custom_post_pass",
           {{"config", "post_grad_custom_post_pass"}, {"off_value", nullptr}, {"gate", "post_grad_passes"}}}}},
        {"user_passes", {{"pre_grad_custom_pass", "__main__.scale_second_softmax"}}}}}};
  return parse_plugin_status(status).inductor_rules;
}

TEST(BisectionKnobs, AUserPassWithItsGateIsTheUsersPassAndItsWorkaroundLeavesTheGateOn) {
  const std::map<std::string, InductorRule> rules = rules_with_user_pass();
  EXPECT_EQ(rules.at("pre_grad_custom_pass").user_pass, "__main__.scale_second_softmax");
  EXPECT_EQ(rules.at("pre_grad_custom_pass").gate, "pre_grad_passes");
  EXPECT_TRUE(rules.at("pre_grad_custom_pass").off_value.is_null());
  EXPECT_EQ(user_pass_of({"pre_grad_passes", "pre_grad_custom_pass"}, rules), "pre_grad_custom_pass");
  EXPECT_EQ(user_pass_of({"pre_grad_custom_pass"}, rules), "pre_grad_custom_pass");
  // an Inductor rule of its own among them, an Inductor rule alone, a slot that held no pass
  EXPECT_FALSE(user_pass_of({"pre_grad_custom_pass", "split_reductions"}, rules));
  EXPECT_FALSE(user_pass_of({"pre_grad_passes"}, rules));
  EXPECT_FALSE(user_pass_of({"post_grad_custom_post_pass"}, rules));
  // the bisection's gates: a user's pass with its gate, both among the candidates
  EXPECT_EQ(user_pass_gates({"split_reductions", "pre_grad_passes", "pre_grad_custom_pass"}, rules),
            (std::map<std::string, std::string>{{"pre_grad_custom_pass", "pre_grad_passes"}}));
  EXPECT_TRUE(user_pass_gates({"split_reductions", "pre_grad_custom_pass"}, rules).empty());
  EXPECT_TRUE(user_pass_gates({"pre_grad_passes", "post_grad_custom_post_pass"}, rules).empty());
  EXPECT_EQ(without_user_pass_gates({"pre_grad_custom_pass", "pre_grad_passes"}, rules),
            (bisect::Config{"pre_grad_custom_pass"}));
  EXPECT_EQ(without_user_pass_gates({"pre_grad_passes", "split_reductions"}, rules),
            (bisect::Config{"pre_grad_passes", "split_reductions"}));
}

TEST(BisectionKnobs, FiredRulesFromFusionResultOrPluginStatus) {
  TempDir dir;
  write_text(dir / "fusion_result.json",
             R"({"session_and_graph_id_0_0": {"graph_fusion": {"A": {"effect_times": "2", "match_times": "2"},
                 "B": {"effect_times": "0", "match_times": "1"}}, "ub_fusion": {"U": {"effect_times": "1"}}}})");
  EXPECT_EQ(*read_fired_report(dir / "fusion_result.json"), (std::vector<std::string>{"A", "U"}));
  EXPECT_EQ(report_sections(dir / "fusion_result.json").at("U"), torchair::FusionSection::UB);
  write_text(dir / "status.json",
             R"({"format": "diagnose-run-status", "inductor_rules": {"fired": ["emulate_precision_casts"]}})");
  EXPECT_EQ(*read_fired_report(dir / "status.json"), (std::vector<std::string>{"emulate_precision_casts"}));
  EXPECT_FALSE(read_fired_report(dir / "absent.json").has_value());
  write_text(dir / "bad.json", "{\"session_and_graph_id_0_0\": 3}");
  EXPECT_THROW(read_fired_report(dir / "bad.json"), std::exception);
}

TEST(BisectionKnobs, ANodeSearchsCompiledNodesAreItsFiredReport) {
  // an Inductor run's status.json also says which Inductor switches fired
  TempDir dir;
  write_text(dir / "status.json",
             R"({"format": "diagnose-run-status", "inductor_rules": {"fired": ["emulate_precision_casts"]},
                 "isolation": {"nodes": [], "compiled": ["g0.mul", "g0.add"]}})");
  FiredReportKnob knob("status.json");
  EXPECT_EQ(*knob.fired_rules(dir / "status.json"), (std::vector<std::string>{"g0.mul", "g0.add"}));
}

TEST(BisectionKnobs, KeepsKnownSectionsInTheTrialLogAndLeavesUnknownOnesUnknown) {
  TempDir dir;
  FusionSwitchFileKnob knob("fusion_result.json",
                            {{"GraphRule", torchair::FusionSection::Graph}, {"UbRule", torchair::FusionSection::UB}});
  bisect::TrialLog log;
  log.fingerprint = {{"command", {"model"}}};
  log.candidates = {"GraphRule", "UbRule", "GivenRule"};
  log.knob_state = knob.state();
  bisect::write_trial_log(bisect::trial_log_path(dir.path()), log);

  std::optional<bisect::TrialLog> read = bisect::read_trial_log(bisect::trial_log_path(dir.path()));
  ASSERT_TRUE(read);
  FusionSwitchFileKnob resumed("fusion_result.json");
  resumed.resume(read->knob_state, read->candidates, dir / "absent.json");
  EXPECT_EQ(resumed.sections(), knob.sections());  // GivenRule stays unknown: off in both sections
  torchair::FusionSwitch off = switch_for({"GivenRule"}, resumed.sections());
  EXPECT_EQ(off.graph.rules.at("GivenRule"), false);
  EXPECT_EQ(off.ub.rules.at("GivenRule"), false);
}

TEST(BisectionKnobs, ReadsTheSectionsOfOlderTrialLogs) {
  TempDir dir;
  // The fusion_bisect step's: every rule not in ub_fusion_rules was a graph rule.
  write_text(dir / "step.json", R"({"fingerprint": "abc", "candidates": ["A", "B"], "ub_fusion_rules": ["B"],
                                   "trials": []})");
  std::optional<bisect::TrialLog> step = bisect::read_trial_log(dir / "step.json");
  ASSERT_TRUE(step);
  FusionSwitchFileKnob knob("fusion_result.json");
  knob.resume(step->knob_state, step->candidates, dir / "absent.json");
  EXPECT_EQ(knob.sections().at("A"), torchair::FusionSection::Graph);
  EXPECT_EQ(knob.sections().at("B"), torchair::FusionSection::UB);
  // diagnose bisect's: no sections recorded
  write_text(dir / "command.json", R"({"bisection": {"command": ["m"], "candidates": ["A"], "golden": ""},
                                      "trials": []})");
  std::optional<bisect::TrialLog> command = bisect::read_trial_log(dir / "command.json");
  ASSERT_TRUE(command);
  FusionSwitchFileKnob unknown("fusion_result.json");
  unknown.resume(command->knob_state, command->candidates, dir / "absent.json");
  EXPECT_TRUE(unknown.sections().empty());
}

}  // namespace
}  // namespace diagnose
