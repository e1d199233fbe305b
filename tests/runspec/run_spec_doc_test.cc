// docs/run-spec.md against the C++ side of the contract: RunSpec reads and writes back every
// field its spec.json table lists (tests/python/docs/test_run_spec_doc.py holds both tables to
// the plugin's fields; status.json is written by the plugin alone, and PluginStatus reads what
// the engine needs of it).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "runspec/plugin_status.h"
#include "runspec/run_spec.h"
#include "tests/support/source_tree.h"

namespace diagnose {
namespace {

using testing_support::source_dir;

// The table under the heading that starts with `heading`: each field's type as written.
std::map<std::string, std::string> documented_fields(const std::string& heading) {
  std::ifstream file(source_dir() + "/docs/run-spec.md");
  std::map<std::string, std::string> fields;
  bool inside = false;
  const std::regex row(R"(^\| `([a-z_.]+)` \| ([^|]+) \|)");
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("## ", 0) == 0) inside = line.rfind("## " + heading, 0) == 0;
    std::smatch match;
    if (inside && std::regex_search(line, match, row)) fields[match[1]] = match[2];
  }
  return fields;
}

// A value of a documented type ("str or null", "list of int"...); an object that has documented
// fields of its own is filled with those.
nlohmann::json sample(const std::string& type, bool has_fields) {
  if (type.rfind("str", 0) == 0) return "x";
  if (type.rfind("bool", 0) == 0) return true;
  if (type.rfind("int", 0) == 0) return 1;
  if (type.rfind("list of str", 0) == 0) return nlohmann::json::array({"x"});
  if (type.rfind("list of int", 0) == 0) return nlohmann::json::array({1});
  return has_fields ? nlohmann::json::object() : nlohmann::json({{"key", 1}});
}

TEST(RunSpecDoc, EveryDocumentedFieldIsReadAndWrittenBack) {
  const std::map<std::string, std::string> fields = documented_fields("spec.json");
  ASSERT_GT(fields.size(), 30u);
  nlohmann::json spec = nlohmann::json::object();
  for (const auto& [name, type] : fields) {  // a field before its own fields
    auto nested = fields.lower_bound(name + ".");
    bool has_fields = nested != fields.end() && nested->first.rfind(name + ".", 0) == 0;
    spec[nlohmann::json::json_pointer("/" + std::regex_replace(name, std::regex("\\."), "/"))] =
        sample(type, has_fields);
  }
  EXPECT_EQ(nlohmann::json(spec.get<RunSpec>()), spec);
}

TEST(PluginStatus, AnyContentParsesWithoutThrowing) {
  for (const char* text : {"null", "[]", "3", R"({"graphs": 1, "features": [], "dump": "x", "argv": "run"})",
                           R"({"configuration": {"active_dropout": [1, {"p": 0.5}]}, "isolation": {"nodes": 2}})"}) {
    const PluginStatus status = parse_plugin_status(nlohmann::json::parse(text));
    EXPECT_FALSE(status.dump.written) << text;
    EXPECT_FALSE(status.ran_script()) << text;
  }
  const PluginStatus dropout =
      parse_plugin_status(nlohmann::json::parse(R"({"configuration": {"active_dropout": [1, {"p": 0.5}]}})"));
  ASSERT_EQ(dropout.configuration.active_dropout.size(), 2u);
  EXPECT_EQ(dropout.configuration.active_dropout[0].module, "?");
  EXPECT_EQ(dropout.configuration.active_dropout[1].p.dump(), "0.5");
}

TEST(PluginStatus, ReadsWhatThePluginWrites) {
  const PluginStatus status = parse_plugin_status(nlohmann::json::parse(R"({
    "spec": {"mode": "compiled", "backend": "inductor", "dump": {"max_bytes": 100},
             "switches": {"inductor": {"fallback_random": true}}},
    "argv": ["-m", "run", "model.py"], "torch_version": "2.13.0",
    "features": {"guard_failures": {"available": false, "reason": "old torch", "without": "no reasons"},
                 "hooks": {"available": true}},
    "graphs": {"graph_breaks": 1, "graph_break_reasons": ["print"], "recompiles": 2, "recompile_reasons": ["a", "b"]},
    "switches": {"active": {"torchair": {"ge_config.oo_level": "O1"}}},
    "isolation": {"nodes": [{"id": "g0.add", "op": "aten.add", "module": "m", "source": "x.py:1"}, {"op": "no id"}]},
    "dump": {"written_bytes": 64, "budget_reached": true, "not_kept": {"budget": 3}}})"));
  EXPECT_TRUE(status.written);
  EXPECT_TRUE(status.ran_script());
  EXPECT_EQ(status.spec_fields.mode, "compiled");
  EXPECT_FALSE(status.spec_fields.dtype);
  EXPECT_TRUE(status.spec_fields.inductor_fallback_random);
  EXPECT_EQ(status.torch_version, "2.13.0");
  EXPECT_TRUE(status.features.at("guard_failures").unavailable);
  EXPECT_EQ(status.features.at("guard_failures").without, "no reasons");
  EXPECT_FALSE(status.features.at("hooks").unavailable);
  EXPECT_EQ(status.graphs.graph_breaks, 1);
  EXPECT_EQ(status.graphs.recompile_reasons, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(status.torchair_options["ge_config.oo_level"], "O1");
  ASSERT_EQ(status.isolated_nodes.size(), 1u);
  EXPECT_EQ(status.isolated_nodes[0].source, "x.py:1");
  EXPECT_TRUE(status.dump.budget_reached);
  EXPECT_EQ(status.dump.written_bytes, 64);
  EXPECT_EQ(status.dump.records_over_budget, 3);
  EXPECT_EQ(status.dump_max_bytes(), 100);
}

}  // namespace
}  // namespace diagnose
