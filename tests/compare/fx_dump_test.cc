#include "compare/fx_dump.h"

#include <gtest/gtest.h>

#include "ge_fixtures.h"

namespace diagnose::compare {
namespace {

using namespace testing;

const std::string kTs = "20240125031118787351";

void touch_npy(const std::string& path) { write_file(path, npy_bytes({1}, {1.0f})); }

TEST(FxFileName, Forms) {
  auto f = parse_fx_file_name("mm-aten.mm.default.INPUT.0." + kTs + ".npy");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->prefix, "mm-aten.mm.default");
  EXPECT_EQ(f->node, "mm");
  EXPECT_EQ(f->target, "aten.mm.default");
  EXPECT_TRUE(f->input);
  EXPECT_EQ(f->index, 0);
  EXPECT_EQ(f->item, -1);
  EXPECT_EQ(f->timestamp, kTs);

  f = parse_fx_file_name("cat-aten.cat.default.INPUT.0.3." + kTs + ".npy");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->index, 0);
  EXPECT_EQ(f->item, 3);

  f = parse_fx_file_name("split-aten.split.Tensor.OUTPUT.12." + kTs + ".npy");
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->input);
  EXPECT_EQ(f->index, 12);

  EXPECT_FALSE(parse_fx_file_name("mm-aten.mm.default.INPUT.0." + kTs));
  EXPECT_FALSE(parse_fx_file_name("mm-aten.mm.default.OUTPUT.0.1." + kTs + ".npy"));
  EXPECT_FALSE(parse_fx_file_name("mm-aten.mm.default.INPUT.x." + kTs + ".npy"));
  EXPECT_FALSE(parse_fx_file_name("mm-aten.mm.default.INPUT.0.1.2." + kTs + ".npy"));
  EXPECT_FALSE(parse_fx_file_name("weights.npy"));
  EXPECT_FALSE(parse_fx_file_name(".INPUT.0." + kTs + ".npy"));
}

TEST(FxDump, StepIndexSortsNumerically) {
  TempDir dir;
  for (int i : {10, 2, 0, 1})
    touch_npy(dir / ("cat-aten.cat.default.INPUT.0." + std::to_string(i) + "." + kTs + ".npy"));
  touch_npy(dir / ("cat-aten.cat.default.INPUT.1." + kTs + ".npy"));
  touch_npy(dir / ("cat-aten.cat.default.OUTPUT.0." + kTs + ".npy"));
  touch_npy(dir / "not_fx.npy");
  std::vector<std::string> warnings;
  const auto nodes = index_fx_step(dir.path(), &warnings);
  ASSERT_EQ(nodes.size(), 1u);
  const FxNode& n = nodes.at("cat-aten.cat.default");
  EXPECT_EQ(n.target, "aten.cat.default");
  ASSERT_EQ(n.inputs.size(), 5u);
  const std::vector<std::pair<int, int>> expected = {{0, 0}, {0, 1}, {0, 2}, {0, 10}, {1, -1}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(n.inputs[i].index, expected[i].first);
    EXPECT_EQ(n.inputs[i].item, expected[i].second);
  }
  ASSERT_EQ(n.outputs.size(), 1u);
  EXPECT_TRUE(warnings.empty());
}

TEST(FxDump, RepeatedNodeKeepsFirstCall) {
  TempDir dir;
  touch_npy(dir / "add-aten.add.Tensor.OUTPUT.0.20240101000000000002.npy");
  touch_npy(dir / "add-aten.add.Tensor.OUTPUT.0.20240101000000000001.npy");
  std::vector<std::string> warnings;
  const auto nodes = index_fx_step(dir.path(), &warnings);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes.at("add-aten.add.Tensor").timestamp, "20240101000000000001");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 times"), std::string::npos);
}

TEST(FxDump, CurrentLayoutWithRanks) {
  TempDir dir;
  for (const char* rank : {"worldsize2_global_rank0", "worldsize2_global_rank1"})
    for (const char* step : {"graph_10/0", "graph_2/0", "graph_2/1"})
      touch_npy(dir / (std::string(rank) + "/" + step + "/add-aten.add.Tensor.OUTPUT.0." + kTs + ".npy"));
  const FxDumpLayout l = scan_fx_dump(dir.path());
  EXPECT_FALSE(l.older_layout);
  ASSERT_EQ(l.ranks.size(), 2u);
  EXPECT_EQ(l.ranks[1].rank, 1);
  ASSERT_EQ(l.ranks[0].groups.size(), 2u);
  EXPECT_EQ(l.ranks[0].groups[0].name, "graph_2");  // by graph id, not by name
  ASSERT_EQ(l.ranks[0].groups[0].steps.size(), 2u);
  EXPECT_EQ(l.ranks[0].groups[0].steps[1].token_id, 1);
  std::string detail;
  EXPECT_TRUE(is_fx_dump(dir.path(), &detail));
  EXPECT_NE(detail.find("2 rank(s)"), std::string::npos) << detail;
}

// A run's dump directory, as get_fx_dump_config(dump_path=...) fills it: the dump is in fx_dump/.
TEST(FxDump, DumpPathOfGetFxDumpConfig) {
  TempDir dir;
  touch_npy(dir /
            (std::string("fx_dump/worldsize1_global_rank0/graph_1/0/add-aten.add.Tensor.OUTPUT.0.") + kTs + ".npy"));
  const FxDumpLayout l = scan_fx_dump(dir.path());
  ASSERT_EQ(l.ranks.size(), 1u);
  EXPECT_EQ(l.ranks[0].rank, 0);
  EXPECT_TRUE(is_fx_dump(dir.path(), nullptr));
}

TEST(FxDump, OlderLayoutSubtractsOneFromStep) {
  TempDir dir;
  for (const char* p :
       {"data_dump/1/gm_100_dump", "data_dump/1/gm_200_dump", "data_dump/2/gm_300_dump", "data_dump/2/gm_400_dump"}) {
    touch_npy(dir / (std::string(p) + "/mm-aten.mm.default.OUTPUT.0." + kTs + ".npy"));
  }
  for (const std::string& root : {dir.path(), dir / "data_dump"}) {
    const FxDumpLayout l = scan_fx_dump(root);
    EXPECT_TRUE(l.older_layout);
    ASSERT_EQ(l.ranks.size(), 1u);
    EXPECT_EQ(l.ranks[0].rank, -1);
    ASSERT_EQ(l.ranks[0].groups.size(), 2u);
    const auto& g1 = l.ranks[0].groups[1];
    ASSERT_EQ(g1.steps.size(), 2u);
    EXPECT_EQ(g1.steps[0].token_id, 0);
    EXPECT_EQ(g1.steps[1].token_id, 1);
    EXPECT_NE(g1.steps[1].path.find("gm_400_dump"), std::string::npos);
    std::string detail;
    EXPECT_TRUE(is_fx_dump(root, &detail));
    EXPECT_NE(detail.find("older"), std::string::npos);
  }
}

TEST(FxDump, NotAnFxDump) {
  TempDir dir;
  std::string detail;
  EXPECT_FALSE(is_fx_dump(dir.path(), &detail));
  touch_npy(dir / "weights.npy");
  EXPECT_FALSE(is_fx_dump(dir.path(), &detail));
  EXPECT_FALSE(is_fx_dump(dir / "missing", &detail));
  touch_npy(dir / ("relu-aten.relu.default.OUTPUT.0." + kTs + ".npy"));
  EXPECT_TRUE(is_fx_dump(dir.path(), &detail));
}

TEST(FxDump, RankDirectoryNames) {
  EXPECT_EQ(rank_of_dir_name("worldsize8_global_rank3"), 3);
  EXPECT_FALSE(rank_of_dir_name("worldsize8_global_rankx"));
  EXPECT_FALSE(rank_of_dir_name("rank3"));
  EXPECT_FALSE(rank_of_dir_name("worldsize_global_rank3"));
}

}  // namespace
}  // namespace diagnose::compare
