// The machine-readable outputs against their contracts: report.json against
// docs/report-schema.json, junit.xml through an XML parser, `diagnose schema`
// against the example workflow.
#include <gtest/gtest.h>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "orchestrator/engine/run_dir.h"
#include "orchestrator/report/junit.h"
#include "orchestrator/report/markup.h"
#include "tests/support/e2e_helpers.h"
#include "tests/support/json_schema_check.h"

namespace diagnose {
namespace {

using namespace testing_support;

nlohmann::json report_schema() { return read_json(source_dir() + "/docs/report-schema.json"); }

// A workflow that exercises every status: pass, fail, error (crash), skipped.
std::string mixed_workflow() {
  return "name: mixed\n" + stand_in_model_yaml() + "steps:\n" +
         stand_in_comparison_steps("--perturb, linear", "fusion_defect") + R"yaml(  - id: never
    kind: assert
    when: steps.compare.status == pass
    fail_if: steps.compare.failed > 0
  - id: crash
    kind: run
    argv: [sh, -c, 'echo "boom <&> \"quoted\"" >&2; exit 4']
)yaml";
}

class Reports : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new TempDir;
    write_text(*scratch_ / "wf.yaml", mixed_workflow());
    Finished r = run_diagnose({"wf.yaml", "-q"}, scratch_->path());
    exit_code_ = r.code;
    run_dir_ = only_run_dir(*scratch_ / "runs");
  }
  static void TearDownTestSuite() { delete scratch_; }
  static TempDir* scratch_;
  static std::string run_dir_;
  static int exit_code_;
};
TempDir* Reports::scratch_ = nullptr;
std::string Reports::run_dir_;
int Reports::exit_code_ = -1;

TEST_F(Reports, ReportJsonValidatesAgainstItsSchema) {
  ASSERT_EQ(exit_code_, 1);  // the fusion defect outranks the later crash
  nlohmann::json report = read_json(run_dir_ + "/report.json");
  EXPECT_EQ(schema_violations(report, report_schema()), std::vector<std::string>{});
  EXPECT_EQ(report["verdict"]["category"], "fusion_defect");
  EXPECT_EQ(report["verdict"]["culprit"], "01_linear");
  std::vector<std::string> statuses;
  for (const auto& step : report["steps"]) statuses.push_back(step["status"]);
  EXPECT_EQ(statuses, (std::vector<std::string>{"pass", "pass", "fail", "skipped", "error"}));
}

TEST_F(Reports, SchemaCheckerRejectsDrift) {
  nlohmann::json report = read_json(run_dir_ + "/report.json");
  nlohmann::json schema = report_schema();
  nlohmann::json missing = report;
  missing["verdict"].erase("category");
  EXPECT_EQ(schema_violations(missing, schema), std::vector<std::string>{"$.verdict: missing required category"});
  nlohmann::json extra = report;
  extra["steps"][0]["surprise"] = 1;
  EXPECT_EQ(schema_violations(extra, schema), std::vector<std::string>{"$.steps[0]: unexpected property surprise"});
  nlohmann::json wrong = report;
  wrong["steps"][4]["runs"][0]["status"] = "exploded";
  EXPECT_EQ(schema_violations(wrong, schema).size(), 1u);
  wrong = report;
  wrong["version"] = 2;
  EXPECT_EQ(schema_violations(wrong, schema), std::vector<std::string>{"$.version: expected 1, got 2"});
}

TEST_F(Reports, InterruptedRunReportAlsoValidates) {
  TempDir dir;
  write_text(dir / "wf.yaml", "model: {argv: [sleep, \"30\"]}\nsteps:\n  - {id: slow, kind: run}\n");
  DiagnoseProcess engine({"wf.yaml"}, dir.path());
  ASSERT_TRUE(wait_until(
      [&] {
        return fs::exists(dir / "runs") && !only_run_dir(dir / "runs").empty() &&
               read_text(only_run_dir(dir / "runs") + "/state.json").find("\"running\"") != std::string::npos;
      },
      10));
  ::kill(engine.pid(), SIGINT);
  ASSERT_EQ(engine.wait(), 130);
  nlohmann::json report = read_json(only_run_dir(dir / "runs") + "/report.json");
  EXPECT_EQ(schema_violations(report, report_schema()), std::vector<std::string>{});
  EXPECT_EQ(report["complete"], false);
  EXPECT_EQ(report["finished"], nullptr);
  EXPECT_EQ(report["steps"][0]["runs"][0]["status"], "interrupted");
}

TEST_F(Reports, ReportCommandRendersTheSameReportsFromReportJsonAlone) {
  TempDir moved;
  fs::copy_file(run_dir_ + "/report.json", moved / "report.json");
  Finished r = run_diagnose({"report", moved.path(), "-q"}, moved.path());
  EXPECT_EQ(r.code, 1) << r.err;
  for (const char* name : {"report.json", "report.md", "report.html", "junit.xml"})
    EXPECT_EQ(read_text(moved / name), read_text(run_dir_ + "/" + name)) << name;
  EXPECT_NE(read_text(moved / "report.html").find("compare-plot"), std::string::npos);
}

TEST_F(Reports, ReportCommandRendersAnOlderReportJsonFromTheRunDirectory) {
  TempDir copy;
  fs::copy(run_dir_, copy / "run", fs::copy_options::recursive);
  nlohmann::json older = read_json(copy / "run/report.json");
  for (auto& step : older["steps"]) step.erase("sections");
  write_text(copy / "run/report.json", older.dump(2));
  Finished r = run_diagnose({"report", copy / "run", "-q"}, copy.path());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(read_text(copy / "run/report.html").find("compare-plot"), std::string::npos);
  EXPECT_TRUE(read_json(copy / "run/report.json")["steps"][0].contains("sections"));
}

TEST_F(Reports, JunitParsesWithOneCasePerStep) {
  boost::property_tree::ptree xml;
  ASSERT_NO_THROW(boost::property_tree::read_xml(run_dir_ + "/junit.xml", xml));
  const auto& suite = xml.get_child("testsuites.testsuite");
  EXPECT_EQ(suite.get<std::string>("<xmlattr>.name"), "mixed");
  EXPECT_EQ(suite.get<int>("<xmlattr>.tests"), 5);
  EXPECT_EQ(suite.get<int>("<xmlattr>.failures"), 1);
  EXPECT_EQ(suite.get<int>("<xmlattr>.errors"), 1);
  EXPECT_EQ(suite.get<int>("<xmlattr>.skipped"), 1);
  std::map<std::string, std::string> outcome;
  for (const auto& [tag, testcase] : suite) {
    if (tag != "testcase") continue;
    std::string name = testcase.get<std::string>("<xmlattr>.name");
    EXPECT_EQ(testcase.get<std::string>("<xmlattr>.classname"), "diagnose.mixed");
    outcome[name] = testcase.count("failure")   ? "failure"
                    : testcase.count("error")   ? "error"
                    : testcase.count("skipped") ? "skipped"
                                                : "ok";
    if (name == "crash") {
      EXPECT_NE(testcase.get<std::string>("error").find("boom <&> \"quoted\""), std::string::npos);
    }
    if (name == "compare") {
      EXPECT_EQ(testcase.get<std::string>("failure.<xmlattr>.type"), "fusion_defect");
    }
  }
  EXPECT_EQ(outcome,
            (std::map<std::string, std::string>{
                {"eager", "ok"}, {"graph", "ok"}, {"compare", "failure"}, {"never", "skipped"}, {"crash", "error"}}));
}

TEST(Junit, EscapesWhatXmlForbids) { EXPECT_EQ(markup_escape("a<b>&\"c'\x01"), "a&lt;b&gt;&amp;&quot;c&#39;?"); }

TEST(WorkflowSchema, ExampleWorkflowValidatesAgainstTheSchemaCommandOutput) {
  Finished r = run_diagnose({"schema"}, fs::temp_directory_path().string());
  ASSERT_EQ(r.code, 0);
  nlohmann::json schema = nlohmann::json::parse(r.out);
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema["required"], nlohmann::json::array({"model", "steps"}));
  nlohmann::json workflow = yaml_to_json(YAML::LoadFile(source_dir() + "/workflows/minimal.yaml"));
  EXPECT_EQ(schema_violations(workflow, schema), std::vector<std::string>{});

  nlohmann::json misspelt = workflow;
  misspelt["steps"][0]["agrs"] = nlohmann::json::array();
  EXPECT_EQ(schema_violations(misspelt, schema), std::vector<std::string>{"$.steps[0]: matches none of anyOf"});
  nlohmann::json bad_slots = workflow;
  bad_slots["defaults"]["slots"] = 0;
  EXPECT_EQ(schema_violations(bad_slots, schema), std::vector<std::string>{"$.defaults.slots: below minimum"});
}

}  // namespace
}  // namespace diagnose
