// The typed run spec: what it writes, how specs merge, and the dump-level rule held to the cases
// the plugin's test reads too (tests/vectors/dump_levels.json).
#include "runspec/run_spec.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/source_tree.h"

namespace diagnose {
namespace {

using testing_support::source_dir;

nlohmann::json read_vectors(const std::string& name) {
  std::ifstream file(source_dir() + "/tests/vectors/" + name);
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

TEST(RunSpec, LaterLayersWinFieldByField) {
  RunSpec base;
  base.backend = "inductor";
  base.dtype = "float16";
  base.run_switches().inductor = nlohmann::json{{"a", 1}};
  RunSpec over = spec_of("compiled", dump_at("none"));
  over.run_switches().inductor = nlohmann::json{{"b", 2}};
  const RunSpec merged = overlaid(base, over);
  EXPECT_EQ(nlohmann::json(merged), nlohmann::json::parse(R"({"backend": "inductor", "dtype": "float16",
      "mode": "compiled", "dump": {"level": "none"}, "switches": {"inductor": {"a": 1, "b": 2}}})"));
}

RunSpecPatch patch_of(const nlohmann::json& side) {
  std::vector<RunSpecPatchError> errors;
  RunSpecPatch patch = run_spec_patch(side, errors);
  EXPECT_TRUE(errors.empty()) << side.dump();
  return patch;
}

TEST(RunSpecPatch, SetsResetsOrKeepsEachField) {
  RunSpec base = spec_of("compiled", dump_at("none"));
  base.dtype = "float16";
  base.run_switches().inductor = nlohmann::json{{"a", 1}, {"b", {{"c", 2}}}};
  const RunSpec side = patched(base, patch_of({{"dtype", nullptr},
                                               {"dump", {{"io", {"output"}}}},
                                               {"switches", {{"inductor", {{"a", nullptr}, {"b", {{"d", 3}}}}}}},
                                               {"env", {{"A", "1"}}}}));
  EXPECT_EQ(nlohmann::json(side), nlohmann::json::parse(R"({"mode": "compiled", "dump": {"level": "none",
      "io": ["output"]}, "switches": {"inductor": {"b": {"c": 2, "d": 3}}}})"));
  EXPECT_EQ(nlohmann::json(patched(base, patch_of({{"dump", nullptr}, {"checks", nlohmann::json::object()}}))),
            nlohmann::json::parse(R"({"mode": "compiled", "dtype": "float16", "checks": {},
      "switches": {"inductor": {"a": 1, "b": {"c": 2}}}})"));
  EXPECT_EQ(patched(base, RunSpecPatch()), base);
  base.isolation.emplace().eager_nodes = {"n"};
  EXPECT_TRUE(patched(base, patch_of({{"isolation", {{"eager_nodes", nlohmann::json::array()}}}}))
                  .isolation->eager_nodes.empty());
  EXPECT_EQ(patched(base, patch_of({{"isolation", {{"repro", true}}}})).isolation->eager_nodes,
            std::vector<std::string>{"n"});
}

TEST(RunSpecPatch, NamesWhatItCannotHold) {
  std::vector<RunSpecPatchError> errors;
  const RunSpecPatch patch = run_spec_patch(
      {{"seed", "1"}, {"checks", {{"meta", 3}, {"metaa", true}}}, {"dump", "here"}, {"args", {"x"}}}, errors);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0].path, (std::vector<std::string>{"seed"}));
  EXPECT_EQ(errors[0].message, "seed has the wrong type: \"1\"");
  EXPECT_EQ(errors[1].path, (std::vector<std::string>{"dump"}));
  EXPECT_EQ(errors[2].path, (std::vector<std::string>{"checks", "meta"}));
  EXPECT_EQ(errors[2].message, "checks.meta has the wrong type: 3");
  EXPECT_EQ(errors[3].path, (std::vector<std::string>{"checks", "metaa"}));
  EXPECT_EQ(errors[3].message, "unknown key in checks: metaa");
  EXPECT_EQ(nlohmann::json(patch.set), (nlohmann::json{{"checks", nlohmann::json::object()}}));
}

}  // namespace
}  // namespace diagnose
