#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fusion_files/fusion_result.h"
#include "fusion_files/fusion_switch.h"

namespace fs = std::filesystem;
using namespace diagnose::torchair;

namespace {

class FusionFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusion_files_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  // The error a malformed file raises, which must name the file.
  template <typename Reader>
  std::string error_of(Reader read, const std::string& text) {
    fs::path path = write("bad.json", text);
    try {
      read(path);
    } catch (const FusionFileError& e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind(path.string() + ":", 0), 0u) << message;
      return message;
    }
    ADD_FAILURE() << "no error for " << text;
    return {};
  }

  fs::path dir_;
};

TEST_F(FusionFiles, SwitchFileTurnsRulesOffInTheirOwnSection) {
  std::map<std::string, FusionSection> sections{{"MatMulBiasAddFusionPass", FusionSection::Graph},
                                                {"TbeEltwiseFusionPass", FusionSection::UB},
                                                {"SoftmaxFusionPass", FusionSection::Graph}};
  FusionSwitch fusion_switch = switch_turning_off({"TbeEltwiseFusionPass", "MatMulBiasAddFusionPass"}, sections);
  fs::path path = dir_ / "switch.cfg";
  write_fusion_switch_file(path, fusion_switch);

  std::ifstream in(path);
  nlohmann::json written = nlohmann::json::parse(in);
  EXPECT_EQ(written, nlohmann::json::parse(R"({"Switch": {"GraphFusion": {"MatMulBiasAddFusionPass": "off"},
                                                           "UBFusion": {"TbeEltwiseFusionPass": "off"}}})"));

  FusionSwitch read = read_fusion_switch_file(path);
  EXPECT_FALSE(read.is_on(FusionSection::Graph, "MatMulBiasAddFusionPass"));
  EXPECT_FALSE(read.is_on(FusionSection::UB, "TbeEltwiseFusionPass"));
  EXPECT_TRUE(read.is_on(FusionSection::Graph, "SoftmaxFusionPass"));  // not named: GE's default
}

TEST_F(FusionFiles, RuleOfUnknownSectionIsRefused) {
  EXPECT_THROW(switch_turning_off({"Mystery"}, {{"Other", FusionSection::UB}}), std::invalid_argument);
}

TEST_F(FusionFiles, PerRuleEntryBeatsAll) {
  FusionSwitch fusion_switch = parse_fusion_switch(
      R"({"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"},
                     "UBFusion": {"ALL": "on", "TbeEltwiseFusionPass": "off"}}})",
      "inline");
  EXPECT_TRUE(fusion_switch.is_on(FusionSection::Graph, "SoftmaxFusionPass"));
  EXPECT_FALSE(fusion_switch.is_on(FusionSection::Graph, "LayerNormFusionPass"));
  EXPECT_FALSE(fusion_switch.is_on(FusionSection::UB, "TbeEltwiseFusionPass"));
  EXPECT_TRUE(fusion_switch.is_on(FusionSection::UB, "AutomaticUbFusion"));

  // Written back, "ALL" and the rule entries survive.
  FusionSwitch again = parse_fusion_switch(fusion_switch_json(fusion_switch), "again");
  EXPECT_EQ(again.graph.all, std::optional<bool>(false));
  EXPECT_EQ(again.graph.rules, fusion_switch.graph.rules);
  EXPECT_EQ(again.ub.all, std::optional<bool>(true));
  EXPECT_EQ(again.ub.rules, fusion_switch.ub.rules);
}

TEST_F(FusionFiles, MalformedSwitchFilesNameTheFile) {
  auto read = [](const fs::path& p) { read_fusion_switch_file(p); };
  EXPECT_NE(error_of(read, "{\"Switch\": ").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(read, R"({"GraphFusion": {}})").find("Switch"), std::string::npos);
  EXPECT_NE(error_of(read, R"({"Switch": {"GraphFusion": {"A": "maybe"}}})").find("Switch.GraphFusion.A"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"Switch": {"GraphFusion": {"A": true}}})").find("\"on\" or \"off\""), std::string::npos);
  EXPECT_NE(error_of(read, R"({"Switch": {"VectorFusion": {}}})").find("unknown section"), std::string::npos);
  EXPECT_NE(error_of(read, R"({"Switch": {"UBFusion": ["A"]}})").find("not an object"), std::string::npos);
  EXPECT_THROW(read_fusion_switch_file(dir_ / "absent.json"), FusionFileError);
}

const char* const kDictForm = R"({
  "session_and_graph_id_0_0": {
    "graph_fusion": {"MatMulBiasAddFusionPass": {"effect_times": "1", "match_times": "1"},
                     "SoftmaxFusionPass": {"effect_times": "0", "match_times": "2"}},
    "ub_fusion": {"TbeEltwiseFusionPass": {"effect_times": "3", "match_times": "3", "repository_hit_times": "0"}}},
  "session_and_graph_id_0_1": {
    "graph_fusion": {"MatMulBiasAddFusionPass": {"effect_times": "2", "match_times": "2"},
                     "LayerNormFusionPass": {"effect_times": "1", "match_times": "1"}}}})";

TEST_F(FusionFiles, FusionResultDictForm) {
  std::vector<FusionRecord> records = read_fusion_result_file(write("fusion_result.json", kDictForm));
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].graph, "session_and_graph_id_0_0");
  EXPECT_EQ(records[0].section, FusionSection::Graph);
  EXPECT_EQ(records[0].rule, "MatMulBiasAddFusionPass");
  EXPECT_EQ(records[0].match_times, 1);
  EXPECT_EQ(records[0].effect_times, 1);
  EXPECT_EQ(records[1].rule, "SoftmaxFusionPass");
  EXPECT_EQ(records[1].match_times, 2);
  EXPECT_EQ(records[1].effect_times, 0);
  EXPECT_EQ(records[2].section, FusionSection::UB);
  EXPECT_EQ(records[2].effect_times, 3);
  EXPECT_EQ(records[4].graph, "session_and_graph_id_0_1");

  // Matched but never applied (SoftmaxFusionPass) is no candidate; each rule once, first seen first.
  EXPECT_EQ(fired_rules(records),
            (std::vector<std::string>{"MatMulBiasAddFusionPass", "TbeEltwiseFusionPass", "LayerNormFusionPass"}));
  auto sections = rule_sections(records);
  EXPECT_EQ(sections.at("TbeEltwiseFusionPass"), FusionSection::UB);
  EXPECT_EQ(sections.at("LayerNormFusionPass"), FusionSection::Graph);
}

TEST_F(FusionFiles, FusionResultListForm) {
  const char* text = R"([
    {"session_and_graph_id": "0_0",
     "graph_fusion": {"ConvBatchnormFusionPass": {"effect_times": "2", "match_times": "2"}},
     "ub_fusion": {"AutomaticUbFusion": {"effect_times": "1", "match_times": "4"}}},
    {"session_and_graph_id": "0_1", "graph_fusion": {}}])";
  std::vector<FusionRecord> records = parse_fusion_result(text, "list.json");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].graph, "0_0");
  EXPECT_EQ(records[0].rule, "ConvBatchnormFusionPass");
  EXPECT_EQ(records[1].section, FusionSection::UB);
  EXPECT_EQ(records[1].match_times, 4);
  EXPECT_EQ(fired_rules(records), (std::vector<std::string>{"ConvBatchnormFusionPass", "AutomaticUbFusion"}));
  EXPECT_TRUE(parse_fusion_result("[]", "empty.json").empty());
}

TEST_F(FusionFiles, MalformedFusionResultsNameTheFile) {
  auto read = [](const fs::path& p) { read_fusion_result_file(p); };
  EXPECT_NE(error_of(read, "{\"g\": {").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(read, "\"text\"").find("expected an object of graphs or a list"), std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": {"graph_fusion": {"A": {"effect_times": "many"}}}})")
                .find("g.graph_fusion.A.effect_times"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": {"ub_fusion": {"A": {"match_times": "-1"}}}})").find("expected a count"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": {"ub_fusion": {"A": {"match_times": -1}}}})").find("expected a count"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": {"ub_fusion": {"A": {"match_times": "99999999999999999999999"}}}})")
                .find("expected a count"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": {"graph_fusion": ["A"]}})").find("g.graph_fusion is not an object"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": {"graph_fusion": {"A": "1"}}})").find("g.graph_fusion.A is not an object"),
            std::string::npos);
  EXPECT_NE(error_of(read, R"({"g": 3})").find("g is not an object"), std::string::npos);
  EXPECT_NE(error_of(read, R"([{"session_and_graph_id": 0}])").find("[0].session_and_graph_id"), std::string::npos);
  EXPECT_NE(error_of(read, R"([7])").find("[0] is not an object"), std::string::npos);
  EXPECT_THROW(read_fusion_result_file(dir_ / "absent.json"), FusionFileError);
}

TEST_F(FusionFiles, CountsGivenAsNumbersAreAccepted) {
  auto records = parse_fusion_result(R"({"g": {"graph_fusion": {"A": {"effect_times": 2, "match_times": 3}}}})", "n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].effect_times, 2);
  EXPECT_EQ(records[0].match_times, 3);
}

}  // namespace
