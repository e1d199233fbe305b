// The typed run spec: what it writes, how specs merge, and the dump-level rule held to the cases
// the plugin's test reads too (tests/vectors/dump_levels.json).
#include "runspec/run_spec.h"

#include <gtest/gtest.h>

#include <fstream>

namespace diagnose {
namespace {

nlohmann::json read_vectors(const std::string& name) {
  std::ifstream file(std::string(DIAGNOSE_SOURCE_DIR) + "/tests/vectors/" + name);
  return nlohmann::json::parse(file);
}

TEST(RunSpecVectors, ResolvesEachDumpLevelAsThePluginDoes) {
  const nlohmann::json cases = read_vectors("dump_levels.json")["cases"];
  ASSERT_FALSE(cases.empty());
  for (const nlohmann::json& c : cases)
    EXPECT_EQ(resolved_dump_level(c["spec"].get<RunSpec>()), c["level"].get<std::string>()) << c["spec"].dump();
}

TEST(RunSpec, WritesOnlyWhatIsSet) {
  EXPECT_EQ(nlohmann::json(RunSpec()), nlohmann::json::object());
  RunSpec spec = spec_of("eager", dump_at("aten"));
  spec.dump->truth = true;
  spec.run_switches().inductor_off = std::vector<std::string>{"r"};
  EXPECT_EQ(run_spec_text(spec),
            "{\n  \"dump\": {\n    \"level\": \"aten\",\n    \"truth\": true\n  },\n  \"mode\": \"eager\",\n"
            "  \"switches\": {\n    \"inductor_off\": [\n      \"r\"\n    ]\n  }\n}\n");
}

TEST(RunSpec, RefusesUnknownKeysAndWrongTypes) {
  EXPECT_THROW(nlohmann::json({{"mdoe", "eager"}}).get<RunSpec>(), std::invalid_argument);
  EXPECT_THROW(nlohmann::json({{"dump", {{"levle", "aten"}}}}).get<RunSpec>(), std::invalid_argument);
  EXPECT_THROW(nlohmann::json({{"seed", "1"}}).get<RunSpec>(), std::invalid_argument);
  EXPECT_THROW(nlohmann::json({{"dump", {{"steps", {0.5}}}}}).get<RunSpec>(), std::invalid_argument);
  EXPECT_FALSE(echoed_run_spec({{"check", "single_op"}}));
  // as status.json echoes a spec: unset fields null
  std::optional<RunSpec> echo = echoed_run_spec({{"mode", "compiled"}, {"dtype", nullptr}, {"isolation", nullptr}});
  ASSERT_TRUE(echo);
  EXPECT_EQ(nlohmann::json(*echo), nlohmann::json({{"mode", "compiled"}}));
}

TEST(RunSpec, LaterLayersWinFieldByFieldAndASideNullTakesThePluginsDefault) {
  RunSpec base;
  base.backend = "inductor";
  base.dtype = "float16";
  base.run_switches().inductor = nlohmann::json{{"a", 1}};
  RunSpec over = spec_of("compiled", dump_at("none"));
  over.run_switches().inductor = nlohmann::json{{"b", 2}};
  const RunSpec merged = overlaid(base, over);
  EXPECT_EQ(nlohmann::json(merged), nlohmann::json::parse(R"({"backend": "inductor", "dtype": "float16",
      "mode": "compiled", "dump": {"level": "none"}, "switches": {"inductor": {"a": 1, "b": 2}}})"));
  const RunSpec side =
      overlaid_by_side(merged, {{"dtype", nullptr}, {"dump", {{"io", {"output"}}}}, {"env", {{"A", "1"}}}});
  EXPECT_FALSE(side.dtype);
  EXPECT_EQ(nlohmann::json(*side.dump), nlohmann::json({{"level", "none"}, {"io", {"output"}}}));
  EXPECT_THROW(overlaid_by_side(merged, {{"dump", "here"}}), std::invalid_argument);
}

}  // namespace
}  // namespace diagnose
