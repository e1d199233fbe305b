#include "compare/ge_match.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "compare/evaluate.h"
#include "compare/ge_stats.h"
#include "compare/judge.h"
#include "compare/match.h"
#include "ge_fixtures.h"

namespace diagnose::compare {
namespace {

using namespace testing;
using diagnose::testing::kStatsHeader;

const std::string kFxTs = "20240125031118787351";

struct OpText {
  std::string name, type;
  std::vector<std::string> inputs;
  std::vector<std::string> links;  // one output desc per entry; "" for no link
};

std::string graph_text(const std::vector<OpText>& ops) {
  std::string t = "name: \"graph\"\n";
  for (const auto& op : ops) {
    t += "op {\n  name: \"" + op.name + "\"\n  type: \"" + op.type + "\"\n";
    for (const auto& in : op.inputs) t += "  input: \"" + in + "\"\n";
    for (const auto& link : op.links) {
      t += "  output_desc {\n    name: \"y\"\n";
      if (!link.empty()) t += "    attr { key: \"_fx_tensor_name\" value { s: \"" + link + "\" } }\n";
      t += "    attr { key: \"_meta\" value { s: \"Tensor(dtype=torch.float32, shape=torch.Size([2]))\" } }\n";
      t += "  }\n";
    }
    t += "}\n";
  }
  return t;
}

void write_ge_op(const std::string& dir, const std::string& type, const std::string& name, int64_t ts,
                 const std::vector<std::vector<float>>& inputs, const std::vector<std::vector<float>>& outputs) {
  write_file(dir + "/" + type + "." + name + ".1.0." + std::to_string(ts), float_ge_dump(inputs, outputs, name));
}

void write_fx_node(const std::string& dir, const std::string& prefix, const std::vector<std::vector<float>>& inputs,
                   const std::vector<std::vector<float>>& outputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    write_file(dir + "/" + prefix + ".INPUT." + std::to_string(i) + "." + kFxTs + ".npy",
               npy_bytes({static_cast<int64_t>(inputs[i].size())}, inputs[i]));
  for (size_t i = 0; i < outputs.size(); ++i)
    write_file(dir + "/" + prefix + ".OUTPUT." + std::to_string(i) + "." + kFxTs + ".npy",
               npy_bytes({static_cast<int64_t>(outputs[i].size())}, outputs[i]));
}

const std::vector<OpText> kOps = {
    {"arg0_1", "Data", {}, {""}},
    {"Add_1", "Add", {"arg0_1:0", "arg0_1:0"}, {"add_1-aten.add.Tensor.OUTPUT.0"}},
    {"Cast_9", "Cast", {"Add_1:0"}, {""}},
    {"Mul_3", "Mul", {"Cast_9:0", "Const_1:-1"}, {""}},
    {"MatMul_2", "MatMul", {"Add_1:0", "arg0_1:0"}, {"mm-aten.mm.default.OUTPUT.0"}},
    {"Add_2", "Add", {"MatMul_2:0", "arg0_1:0"}, {"add_2-aten.add.Tensor.OUTPUT.0"}},
    {"Cast_5", "Cast", {"Add_2:0"}, {""}},
    {"Relu_4", "Relu", {"Cast_5:0"}, {"relu-aten.relu.default.OUTPUT.0"}},
};

// GE token dir and FX step dir of one (rank, graph, token) for the ops above.
void write_ge_token(const std::string& dir) {
  write_ge_op(dir, "Add", "Add_1", 1700000000000010, {{1, 2}, {3, 4}}, {{4, 6}});
  write_ge_op(dir, "Cast", "Cast_9", 1700000000000020, {{4, 6}}, {{4, 6}});
  write_ge_op(dir, "Mul", "Mul_3", 1700000000000030, {{4, 6}}, {{8, 12}});
  write_ge_op(dir, "MatMul", "MatMul_2", 1700000000000040, {{1}, {2}}, {{2}});
  write_ge_op(dir, "AutomaticBufferFusionOp", "Add_2Cast_5Relu_4", 1700000000000050, {{2}, {1}}, {{3}});
  write_ge_op(dir, "TransData", "trans_TransData_7", 1700000000000060, {{5, 6}}, {{5, 6}});
}

void write_fx_step(const std::string& dir) {
  write_fx_node(dir, "add_1-aten.add.Tensor", {{1, 2}, {3, 4}}, {{4, 6}});
  write_fx_node(dir, "mm-aten.mm.default", {{1}, {2}, {0}}, {{2}});
  write_fx_node(dir, "add_2-aten.add.Tensor", {{2}, {1}}, {{3}});
  write_fx_node(dir, "relu-aten.relu.default", {{3}}, {{3}});
  write_fx_node(dir, "orphan-aten.neg.default", {{3}}, {{-3}});
}

std::vector<const RowSpec*> rows_of(const MatchResult& r, const std::string& my_path_part) {
  std::vector<const RowSpec*> out;
  for (const auto& row : r.rows)
    if (row.my_path.find(my_path_part) != std::string::npos) out.push_back(&row);
  return out;
}

bool has_unmatched(const MatchResult& r, const std::string& name, const std::string& reason_part) {
  return std::any_of(r.unmatched.begin(), r.unmatched.end(),
                     [&](const auto& u) { return u.first == name && u.second.find(reason_part) != std::string::npos; });
}

// A GE dump and the FX dump it is matched with.
struct GeAndFxDumps {
  TempDir ge, fx;
  MatchResult match(std::optional<int> rank = std::nullopt) const { return match_ge_vs_fx(fx.path(), ge.path(), rank); }
};

struct Fixture : GeAndFxDumps {
  explicit Fixture(bool ranks = true) {
    write_file(ge / "dynamo_original_graph_1_rank_0_pid_9_ts_20240101000000000000.txt", graph_text(kOps));
    const std::string ge_token =
        ranks ? ge / "worldsize1_global_rank0/20240101010101/0/graph_1/1/0" : ge / "20240101010101/0/graph_1/1/0";
    write_ge_token(ge_token);
    write_fx_step(ranks ? fx / "worldsize1_global_rank0/graph_1/0" : fx / "data_dump/1/gm_1_dump");
  }
};

TEST(GeMatch, Detection) {
  Fixture f;
  std::string detail;
  EXPECT_TRUE(is_ge_dump(f.ge.path(), &detail));
  EXPECT_NE(detail.find("1 graph txt file(s), 1 rank(s), 1 graph dir(s), 1 token dir(s)"), std::string::npos) << detail;
  EXPECT_FALSE(is_ge_dump(f.fx.path(), &detail));
  const GeDumpLayout l = scan_ge_dump_dir(f.ge.path());
  ASSERT_EQ(l.ranks.size(), 1u);
  EXPECT_EQ(l.ranks[0].rank, 0);
  ASSERT_EQ(l.ranks[0].groups.size(), 1u);
  EXPECT_EQ(l.ranks[0].groups[0].tokens[0].token_id, 0);
  EXPECT_EQ(graph_files_for_rank(l, 0).size(), 1u);
  EXPECT_EQ(graph_files_for_rank(l, 1).size(), 0u);
  EXPECT_EQ(graph_id_of_file("/x/dynamo_original_graph_12_rank_0_pid_9_ts_1.txt"), 12);
}

TEST(GeMatch, LinkedOpInputsAndOutputs) {
  Fixture f;
  const MatchResult r = f.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  const auto add = rows_of(r, "Add.Add_1.");
  ASSERT_EQ(add.size(), 3u);
  EXPECT_EQ(add[0]->direction, Direction::Input);
  EXPECT_EQ(add[0]->index, 0);
  EXPECT_EQ(add[1]->index, 1);
  EXPECT_EQ(add[2]->direction, Direction::Output);
  for (const RowSpec* row : add) {
    EXPECT_EQ(row->op_key, "add_1-aten.add.Tensor");
    EXPECT_EQ(row->rank, 0);
    EXPECT_EQ(row->graph, 1);
    EXPECT_EQ(row->token_id, 0);
    EXPECT_EQ(row->order, 1700000000000010);
    EXPECT_EQ(row->golden_op_type, "aten.add.Tensor");
    EXPECT_EQ(row->my_op_type, "Add");
    EXPECT_TRUE(row->match_note.empty()) << row->match_note;
    ASSERT_TRUE(row->golden && row->mine);
    EXPECT_FALSE(row->self_compare);
  }
  EXPECT_NE(add[1]->golden_path.find("add_1-aten.add.Tensor.INPUT.1." + kFxTs + ".npy"), std::string::npos);
  EXPECT_EQ(add[2]->my_path.substr(add[2]->my_path.size() - 10), ",outputs,0");
  EXPECT_EQ(add[0]->my_path.substr(add[0]->my_path.size() - 9), ",inputs,0");

  std::string error;
  const auto golden = read_all_float(*add[2]->golden, &error);
  const auto mine = read_all_float(*add[2]->mine, &error);
  ASSERT_TRUE(golden && mine) << error;
  EXPECT_EQ(*golden, (std::vector<float>{4, 6}));
  EXPECT_EQ(*mine, (std::vector<float>{4, 6}));
}

TEST(GeMatch, GraphNodesComeFromThePluginsMapBesideTheDump) {
  Fixture f;
  EXPECT_TRUE(f.match().rows.front().graph_nodes.empty());
  // graph 1's ATen nodes: add_1 from Dynamo's g0.x, the fused add_2/relu from g0.h and g0.act;
  // graph 2's and a malformed entry are not this dump's
  write_file(f.ge / "diagnose_graph_nodes_rank_0.json",
             R"({"graphs": {"1": {"add_1": ["g0.x"], "add_2": ["g0.h"], "relu": ["g0.act", "g0.h"], "mm": 3},)"
             R"( "2": {"add_1": ["g1.y"]}}})");
  const MatchResult r = f.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  for (const RowSpec* row : rows_of(r, "Add.Add_1.")) EXPECT_EQ(row->graph_nodes, (std::vector<std::string>{"g0.x"}));
  const auto fused = rows_of(r, "Add_2Cast_5Relu_4");
  ASSERT_FALSE(fused.empty());
  for (const RowSpec* row : fused) EXPECT_EQ(row->graph_nodes, (std::vector<std::string>{"g0.h", "g0.act"}));
  for (const RowSpec* row : rows_of(r, "MatMul_2")) EXPECT_TRUE(row->graph_nodes.empty());
  // another rank's map is not this rank's
  Fixture other;
  write_file(other.ge / "diagnose_graph_nodes_rank_1.json", R"({"graphs": {"1": {"add_1": ["g0.x"]}}})");
  for (const RowSpec& row : other.match().rows) EXPECT_TRUE(row.graph_nodes.empty());
}

TEST(GeMatch, AnUnreadableMapOfGraphNodesIsIgnoredWithAWarning) {
  Fixture f;
  write_file(f.ge / "diagnose_graph_nodes_rank_0.json", "{not json");
  const MatchResult r = f.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  for (const RowSpec& row : r.rows) EXPECT_TRUE(row.graph_nodes.empty());
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("diagnose_graph_nodes_rank_0.json: not a map of graph nodes") != std::string::npos;
  }));
}

TEST(GeMatch, CastAndTransDataSelfCompare) {
  Fixture f;
  const MatchResult r = f.match();
  for (const char* file : {"Cast.Cast_9.", "TransData.trans_TransData_7."}) {
    const auto rows = rows_of(r, file);
    ASSERT_EQ(rows.size(), 1u) << file;
    EXPECT_TRUE(rows[0]->self_compare);
    EXPECT_NE(rows[0]->golden_path.find(std::string(file)), std::string::npos);
    EXPECT_EQ(rows[0]->golden_path.substr(rows[0]->golden_path.size() - 9), ",inputs,0");
    EXPECT_EQ(rows[0]->my_path.substr(rows[0]->my_path.size() - 10), ",outputs,0");
    EXPECT_TRUE(rows[0]->golden && rows[0]->mine);
  }
}

TEST(GeMatch, UnlinkedOpsAndFxNodesAreListed) {
  Fixture f;
  const MatchResult r = f.match();
  EXPECT_TRUE(rows_of(r, "Mul.Mul_3.").empty());
  EXPECT_TRUE(has_unmatched(r, "rank0/Mul_3", "_fx_tensor_name")) << r.unmatched.size();
  EXPECT_TRUE(has_unmatched(r, "rank0/orphan-aten.neg.default", "no linked GE op"));
}

// msit zipped inputs by position whatever the counts; here inputs that do not line up (a count
// difference no folded scalar explains, or element counts that differ) give no rows, and the
// unmatched list says why; the outputs are still compared.
TEST(GeMatch, InputsThatDoNotLineUpAreNotPairedAndSayWhy) {
  Fixture f;
  const MatchResult r = f.match();
  std::vector<const RowSpec*> inputs, outputs;
  for (const auto& row : r.rows)
    if (row.op_key == "mm-aten.mm.default") (row.direction == Direction::Input ? inputs : outputs).push_back(&row);
  EXPECT_TRUE(inputs.empty());
  EXPECT_TRUE(has_unmatched(r, "rank0/MatMul_2 (inputs)",
                            "inputs do not line up (the GE op has 2 inputs, FX node mm-aten.mm.default 3)"));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_TRUE(outputs[0]->match_note.empty());
  EXPECT_TRUE(outputs[0]->golden && outputs[0]->mine);
}

TEST(GeMatch, MissingFxNodeBecomesNotedRows) {
  Fixture f;
  for (const auto& e : std::filesystem::recursive_directory_iterator(f.fx.path()))
    if (e.path().filename().string().rfind("add_1-", 0) == 0) std::filesystem::remove(e.path());
  const MatchResult r = f.match();
  const auto add = rows_of(r, "Add.Add_1.");
  ASSERT_EQ(add.size(), 3u);
  EXPECT_NE(add[0]->match_note.find("no files for add_1-aten.add.Tensor"), std::string::npos) << add[0]->match_note;
  EXPECT_FALSE(add[0]->golden);
  EXPECT_TRUE(add[0]->mine);
  EXPECT_NE(add[2]->match_note.find("FX dump has no add_1-aten.add.Tensor.OUTPUT.0"), std::string::npos);
}

TEST(GeMatch, FusedOpUsesFirstInputsAndLastOutputs) {
  Fixture f;
  const MatchResult r = f.match();
  const auto fused = rows_of(r, "AutomaticBufferFusionOp.Add_2Cast_5Relu_4.");
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_EQ(fused[0]->op_key, "add_2-aten.add.Tensor");
  EXPECT_EQ(fused[1]->op_key, "add_2-aten.add.Tensor");
  EXPECT_NE(fused[1]->golden_path.find("add_2-aten.add.Tensor.INPUT.1."), std::string::npos);
  EXPECT_EQ(fused[2]->op_key, "relu-aten.relu.default");
  EXPECT_EQ(fused[2]->direction, Direction::Output);
  EXPECT_NE(fused[2]->golden_path.find("relu-aten.relu.default.OUTPUT.0."), std::string::npos);
  EXPECT_EQ(fused[2]->my_op_type, "AutomaticBufferFusionOp");
  for (const RowSpec* row : fused) EXPECT_TRUE(row->match_note.empty()) << row->match_note;
  // every row names the FX nodes fused into the GE op (Cast_5, which GE inserted, stands for none)
  for (const RowSpec* row : fused) EXPECT_EQ(row->fx_nodes, (std::vector<std::string>{"add_2", "relu"}));
}

TEST(GeMatch, FusedOpOutputsFollowOriginalOp) {
  Fixture f;
  // A fused op whose name does not split, but whose header names the pre-fusion op.
  toolkit::dump::DumpData d;
  d.set_op_name("fused_block_0");
  add_input(&d, kGeFloat, {1}, 4);
  auto* out = add_output(&d, kGeFloat, {1}, 4);
  out->mutable_original_op()->set_name("Relu_4");
  write_file(f.ge /
                 "worldsize1_global_rank0/20240101010101/0/graph_1/1/0/"
                 "AutomaticBufferFusionOp.fused_block_0.7.0.1700000000000070",
             ge_dump_bytes(d, floats_bytes({2, 3})));
  const MatchResult r = f.match();
  const auto rows = rows_of(r, "fused_block_0");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]->direction, Direction::Output);
  EXPECT_EQ(rows[0]->op_key, "relu-aten.relu.default");
  EXPECT_TRUE(has_unmatched(r, "rank0/fused_block_0 (inputs)", "cannot be split"));
}

// GE's statistics line of a float32 tensor of shape [n], printed as GE prints it.
std::string stats_line(const char* io, int index, const std::vector<float>& v, float max_shift = 0) {
  double sum = 0;
  for (float x : v) sum += x;
  std::ostringstream line;
  line << io << "," << index << "," << v.size() * 4 << ",DT_FLOAT,ND," << v.size() << ","
       << *std::max_element(v.begin(), v.end()) + max_shift << "," << *std::min_element(v.begin(), v.end()) << ","
       << sum / static_cast<double>(v.size()) << "," << v.size() << ",0,0,0\n";
  return line.str();
}

// dump_data="stats": each op's statistics file instead of its binary. Its rows are judged on
// statistics against the FX tensors; a statistics file cut short is named and left out.
TEST(GeMatch, StatisticsFilesAreJudgedOnStatistics) {
  Fixture f;
  const std::string token = f.ge / "worldsize1_global_rank0/20240101010101/0/graph_1/1/0";
  std::filesystem::remove_all(token);
  write_file(
      token + "/Add.Add_1.1.0.1700000000000010.csv",
      kStatsHeader + stats_line("Input", 0, {1, 2}) + stats_line("Input", 1, {3, 4}) + stats_line("Output", 0, {4, 6}));
  write_file(token + "/Cast.Cast_9.1.0.1700000000000020.csv",
             kStatsHeader + stats_line("Input", 0, {4, 6}) + stats_line("Output", 0, {4, 6}));
  write_file(
      token + "/MatMul.MatMul_2.1.0.1700000000000040.csv",
      kStatsHeader + stats_line("Input", 0, {1}) + stats_line("Input", 1, {2}) + stats_line("Output", 0, {2}, 0.5));
  write_file(token + "/AutomaticBufferFusionOp.Add_2Cast_5Relu_4.1.0.1700000000000050.csv",
             kStatsHeader + stats_line("Input", 0, {2}) + "Input,1,4,DT_FL");
  MatchResult r = f.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  EXPECT_TRUE(has_unmatched(r, "rank0/Add_2Cast_5Relu_4", "GE dump file unreadable: line 3: 4 fields"));

  const std::vector<Row> rows = evaluate_rows(r.rows, Tolerances::defaults(), 1);
  const auto row_of = [&](const std::string& op_key, Direction d) -> const Row* {
    for (const Row& row : rows)
      if (row.spec.op_key == op_key && row.spec.direction == d) return &row;
    return nullptr;
  };
  const Row* add = row_of("add_1-aten.add.Tensor", Direction::Output);
  ASSERT_TRUE(add);
  EXPECT_EQ(add->verdict, Verdict::Pass);
  EXPECT_EQ(add->judged_by, "fp32 statistics");
  EXPECT_EQ(add->reasons.front(), "compared on statistics (one side recorded statistics only)");
  EXPECT_EQ(row_of("add_1-aten.add.Tensor", Direction::Input)->verdict, Verdict::Pass);  // inputs line up by shape
  const Row* cast = row_of("Cast_9", Direction::Output);  // GE's own input against its output
  ASSERT_TRUE(cast);
  EXPECT_EQ(cast->verdict, Verdict::Pass);
  EXPECT_EQ(cast->reasons.front(), "compared on recorded statistics (tensors not dumped)");
  const Row* mm = row_of("mm-aten.mm.default", Direction::Output);
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->verdict, Verdict::Fail);
  EXPECT_EQ(mm->my_stats->max, 2.5);
  EXPECT_EQ(mm->golden_stats->max, 2);
}

// GE prints six significant digits: a float64 row is not failed for that rounding alone.
TEST(GeMatch, StatisticsAreJudgedWithinTheirPrintedPrecision) {
  RecordedStats truth;
  truth.min = truth.max = truth.mean = 12.3456789;
  std::vector<RowSpec> specs;
  for (const char* printed : {"12.3457", "12.3458"}) {
    const std::string value = std::string(printed) + "," + printed + "," + printed;
    const GeDump ge = parse_ge_stats(kStatsHeader + "Output,0,8,DT_DOUBLE,ND,1," + value + ",1,0,0,0\n", "x.csv");
    ASSERT_TRUE(ge.ok()) << ge.error;
    RowSpec s;
    s.golden = s.mine = ge.outputs[0];
    s.golden_recorded = truth;
    s.my_recorded = ge.recorded(Direction::Output, 0);
    specs.push_back(s);
  }
  const std::vector<Row> rows = evaluate_rows(specs, Tolerances::defaults(), 1);
  EXPECT_EQ(rows[0].verdict, Verdict::Pass);
  EXPECT_EQ(rows[0].judged_by, "fp64 statistics");
  EXPECT_EQ(rows[1].verdict, Verdict::Fail);  // a difference in the printed digits
}

TEST(GeMatch, OlderFxLayoutWithoutRanks) {
  Fixture f(/*ranks=*/false);
  const MatchResult r = f.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  const auto add = rows_of(r, "Add.Add_1.");
  ASSERT_EQ(add.size(), 3u);
  EXPECT_EQ(add[0]->rank, -1);
  EXPECT_EQ(add[0]->token_id, 0);
  EXPECT_TRUE(has_unmatched(r, "Mul_3", "_fx_tensor_name"));
}

TEST(GeMatch, TwoRanksGraphsAndTokens) {
  GeAndFxDumps dumps;
  const TempDir &ge = dumps.ge, &fx = dumps.fx;
  for (int rank : {0, 1}) {
    write_file(ge / ("dynamo_original_graph_2_rank_" + std::to_string(rank) + "_pid_9_ts_1.txt"), graph_text(kOps));
    write_file(ge / ("dynamo_original_graph_10_rank_" + std::to_string(rank) + "_pid_9_ts_2.txt"), graph_text(kOps));
    const std::string ge_rank =
        ge / ("worldsize2_global_rank" + std::to_string(rank) + "/20240101010101/" + std::to_string(rank));
    const std::string fx_rank = fx / ("worldsize2_global_rank" + std::to_string(rank));
    for (const auto& [graph, model] : {std::pair{"graph_2", "3"}, std::pair{"graph_10", "4"}}) {
      for (const char* token : {"0", "1"}) {
        write_ge_token(ge_rank + "/" + graph + "/" + model + "/" + token);
        write_fx_step(fx_rank + "/" + graph + "/" + token);
      }
    }
  }
  const MatchResult all = dumps.match();
  ASSERT_TRUE(all.fatal_error.empty()) << all.fatal_error;
  const auto add = rows_of(all, "Add.Add_1.");
  ASSERT_EQ(add.size(), 2u * 2u * 2u * 3u);
  std::set<std::tuple<int, int, int64_t>> seen;
  for (const RowSpec* row : add) seen.emplace(row->rank, row->graph, row->token_id);
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_TRUE(seen.count({1, 10, 1}));
  EXPECT_TRUE(seen.count({0, 2, 0}));
  EXPECT_TRUE(has_unmatched(all, "rank1/graph10/Mul_3", "_fx_tensor_name"));

  const MatchResult one = dumps.match(1);
  ASSERT_TRUE(one.fatal_error.empty()) << one.fatal_error;
  for (const auto& row : one.rows) EXPECT_EQ(row.rank, 1);
  EXPECT_EQ(rows_of(one, "Add.Add_1.").size(), 2u * 2u * 3u);

  const MatchResult missing = dumps.match(5);
  EXPECT_NE(missing.fatal_error.find("rank 5"), std::string::npos) << missing.fatal_error;
}

// A prefill graph run once and a decode graph run three times: GE numbers each graph's runs on its
// own (graph_2's tokens 0..2), and the plugin's record of calls gives each run its model call.
struct PrefillAndDecode : GeAndFxDumps {
  PrefillAndDecode() {
    const std::string ge_rank = ge / "worldsize1_global_rank0/20240101010101/0";
    const std::string fx_rank = fx / "worldsize1_global_rank0";
    for (const auto& [graph, model, runs] : {std::tuple{"1", "1", 1}, std::tuple{"2", "2", 3}}) {
      write_file(ge / ("dynamo_original_graph_" + std::string(graph) + "_rank_0_pid_9_ts_1.txt"), graph_text(kOps));
      for (int token = 0; token < runs; ++token) {
        write_ge_token(ge_rank + "/graph_" + graph + "/" + model + "/" + std::to_string(token));
        write_fx_step(fx_rank + "/graph_" + graph + "/" + std::to_string(token));
      }
    }
  }
  // The FX dump as TorchAir's FX dumper writes it when dump.steps chose call 2 alone: the decode
  // graph's step 1 directory, nothing of the prefill graph.
  void fx_dump_holds_call_2_only() const {
    fs::remove_all(fx / "worldsize1_global_rank0/graph_1");
    for (const char* step : {"0", "2"}) fs::remove_all(fx / "worldsize1_global_rank0/graph_2/" + step);
  }
  // (graph, token_id, graph_step) of the Add_1 rows
  static std::set<std::tuple<int, int64_t, int64_t>> calls_of(const MatchResult& r) {
    std::set<std::tuple<int, int64_t, int64_t>> seen;
    for (const RowSpec* row : rows_of(r, "Add.Add_1."))
      seen.emplace(row->graph, row->token_id, row->graph_step.value_or(-1));
    return seen;
  }
};

TEST(GeMatch, RowsCarryTheModelCallOfTheirGraphsRunFromThePluginsRecord) {
  PrefillAndDecode dumps;
  // without the record (a dump the plugin did not make) the rows carry GE's tokens, as GE wrote them
  EXPECT_EQ(PrefillAndDecode::calls_of(dumps.match()),
            (std::set<std::tuple<int, int64_t, int64_t>>{{1, 0, -1}, {2, 0, -1}, {2, 1, -1}, {2, 2, -1}}));

  write_file(dumps.ge / "diagnose_graph_calls_rank_0.json", R"({"graphs": {"1": [0], "2": [1, 2, 3]}})");
  const MatchResult r = dumps.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  EXPECT_EQ(PrefillAndDecode::calls_of(r),
            (std::set<std::tuple<int, int64_t, int64_t>>{{1, 0, 0}, {2, 1, 0}, {2, 2, 1}, {2, 3, 2}}));

  // GE against GE: the record beside my dump
  const MatchResult both = match_ge_vs_ge(dumps.ge.path(), dumps.ge.path(), std::nullopt);
  ASSERT_TRUE(both.fatal_error.empty()) << both.fatal_error;
  EXPECT_EQ(PrefillAndDecode::calls_of(both), PrefillAndDecode::calls_of(r));
}

TEST(GeMatch, ATokenTheRecordOfCallsLacksIsSkippedWithAWarning) {
  PrefillAndDecode dumps;
  write_file(dumps.ge / "diagnose_graph_calls_rank_0.json", R"({"graphs": {"1": [0], "2": [1, 2]}})");
  const MatchResult r = dumps.match();
  EXPECT_EQ(PrefillAndDecode::calls_of(r),
            (std::set<std::tuple<int, int64_t, int64_t>>{{1, 0, 0}, {2, 1, 0}, {2, 2, 1}}));
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("token 2 of graph 2 is not in the record of calls (2 runs recorded); skipped") != std::string::npos;
  })) << ::testing::PrintToString(r.warnings);

  write_file(dumps.ge / "diagnose_graph_calls_rank_0.json", "[1, 2]");
  const MatchResult unreadable = dumps.match();
  EXPECT_EQ(PrefillAndDecode::calls_of(unreadable).size(), 4u);
  EXPECT_TRUE(std::any_of(unreadable.warnings.begin(), unreadable.warnings.end(), [](const std::string& w) {
    return w.find("diagnose_graph_calls_rank_0.json: not a record of the calls each graph ran in") != std::string::npos;
  }));
}

// dump.steps [1]: GE chose tokens 0-1 of each graph (it chooses by token), and the record leaves
// out the runs of the calls not chosen, so only call 1 (the decode graph's token 0) is compared.
TEST(GeMatch, TheRunsOfCallsLeftOutByDumpStepsAreNotCompared) {
  PrefillAndDecode dumps;
  write_file(dumps.ge / "diagnose_graph_calls_rank_0.json", R"({"graphs": {"1": [null], "2": [1, null, null]}})");
  const MatchResult r = dumps.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  EXPECT_EQ(PrefillAndDecode::calls_of(r), (std::set<std::tuple<int, int64_t, int64_t>>{{2, 1, 0}}));
  EXPECT_TRUE(std::none_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("skipped") != std::string::npos;
  })) << ::testing::PrintToString(r.warnings);
}

// The FX dump of a run whose dump.steps chose call 2 alone (TorchAir's FX dumper: the decode
// graph's step 1 directory, nothing of the prefill graph) pairs with the decode graph's GE dump by
// id, where by position it would pair with the prefill graph's. With dump.steps [2] on both sides
// the prefill graph's GE runs are all left out, so it needs no FX partner; on the golden side
// alone GE dumped every run, and the GE graph without a golden directory is skipped with a warning.
TEST(GeMatch, AnFxDumpOfTheChosenCallAlonePairsWithItsGraphById) {
  for (const bool both_sides : {true, false}) {
    PrefillAndDecode dumps;
    write_file(dumps.ge / "diagnose_graph_calls_rank_0.json", both_sides
                                                                  ? R"({"graphs": {"1": [null], "2": [null, 2, null]}})"
                                                                  : R"({"graphs": {"1": [0], "2": [1, 2, 3]}})");
    dumps.fx_dump_holds_call_2_only();
    const MatchResult r = dumps.match();
    ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
    EXPECT_EQ(PrefillAndDecode::calls_of(r), (std::set<std::tuple<int, int64_t, int64_t>>{{2, 2, 1}}));
    for (const RowSpec* row : rows_of(r, "Add.Add_1."))
      EXPECT_NE(row->golden_path.find("/graph_2/1/"), std::string::npos) << row->golden_path;
    const bool prefill_skipped = std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
      return w == "rank 0: graph 1 has a GE dump directory and no golden directory; skipped";
    });
    EXPECT_EQ(prefill_skipped, !both_sides) << ::testing::PrintToString(r.warnings);
    if (both_sides) {
      EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(r.warnings);
    }
  }
}

// A graph none of whose runs GE dumped (dump_step left them out) has no GE directory: the graphs
// that have one pair with their own graph txt and FX directory by id, not by position.
TEST(GeMatch, GraphsPairByIdWhenOneSideLacksAGraph) {
  PrefillAndDecode dumps;
  fs::remove_all(dumps.ge / "worldsize1_global_rank0/20240101010101/0/graph_1");
  const MatchResult r = dumps.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  const auto add = rows_of(r, "Add.Add_1.");
  ASSERT_EQ(add.size(), 3u * 3u);
  for (const RowSpec* row : add) {
    EXPECT_EQ(row->graph, 2);
    EXPECT_NE(row->my_path.find("/graph_2/"), std::string::npos) << row->my_path;
    EXPECT_NE(row->golden_path.find("/graph_2/"), std::string::npos) << row->golden_path;
  }
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w == "rank 0: graph 1 has a golden directory and no GE dump directory; skipped";
  })) << ::testing::PrintToString(r.warnings);
}

// The FX dump and the GE dump made in one process: TorchAir numbers the graphs on (FX graph_1, GE
// graph_2), so the ids do not pair them; their positions do.
TEST(GeMatch, GraphsNumberedOnInOneProcessPairByPosition) {
  GeAndFxDumps dumps;
  write_file(dumps.ge / "dynamo_original_graph_2_rank_0_pid_9_ts_1.txt", graph_text(kOps));
  write_ge_token(dumps.ge / "worldsize1_global_rank0/20240101010101/0/graph_2/2/0");
  write_fx_step(dumps.fx / "worldsize1_global_rank0/graph_1/0");
  const MatchResult r = dumps.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  const auto add = rows_of(r, "Add.Add_1.");
  ASSERT_EQ(add.size(), 3u);
  EXPECT_EQ(add[0]->graph, 2);
  EXPECT_TRUE(r.warnings.empty()) << ::testing::PrintToString(r.warnings);
}

TEST(GeMatch, DuplicateOpKeepsLargerFile) {
  Fixture f;
  const std::string token = f.ge / "worldsize1_global_rank0/20240101010101/0/graph_1/1/0";
  write_ge_op(token, "Add", "Add_1", 1700000000000099, {{1, 2, 3}, {3, 4, 5}}, {{4, 6, 8}});
  std::vector<std::string> warnings;
  const auto files = index_ge_token(token, &warnings);
  ASSERT_EQ(files.count("Add_1"), 1u);
  EXPECT_EQ(files.at("Add_1").name.timestamp, 1700000000000099);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("keeping the larger"), std::string::npos);
}

TEST(GeMatch, SymlinkLoopAndUnreadableFiles) {
  Fixture f;
  const std::string token = f.ge / "worldsize1_global_rank0/20240101010101/0/graph_1/1/0";
  std::filesystem::create_directory_symlink(f.ge.path(), token + "/loop");
  std::filesystem::create_directory_symlink(token, f.ge / "worldsize1_global_rank0/20240101010101/again");
  write_file(token + "/Neg.Neg_8.1.0.1700000000000080", "garbage, not a GE dump");
  const MatchResult r = f.match();
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  EXPECT_EQ(rows_of(r, "Add.Add_1.").size(), 3u);
  EXPECT_TRUE(has_unmatched(r, "rank0/Neg_8", "unreadable"));
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(),
                          [](const std::string& w) { return w.find("Neg.Neg_8") != std::string::npos; }));
}

TEST(GeMatch, MalformedGraphTxtIsReported) {
  Fixture f;
  write_file(f.ge / "dynamo_original_graph_1_rank_0_pid_9_ts_20240101000000000000.txt", "op { name: ");
  const MatchResult r = f.match();
  EXPECT_FALSE(r.fatal_error.empty());
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(),
                          [](const std::string& w) { return w.find("graph txt skipped") != std::string::npos; }));
}

TEST(GeMatch, NothingToCompare) { EXPECT_FALSE(GeAndFxDumps().match().fatal_error.empty()); }

TEST(GeMatch, GeVsGeGathersFusedInputs) {
  TempDir golden, mine;
  write_file(mine / "dynamo_original_graph_1_rank_0_pid_9_ts_1.txt", graph_text(kOps));
  const std::string my_token = mine / "20240101010101/0/graph_1/1/0";
  const std::string golden_token = golden / "20240101010101/0/graph_1/1/0";
  write_ge_op(my_token, "Add", "Add_1", 1700000000000010, {{1, 2}, {3, 4}}, {{4, 6}});
  write_ge_op(my_token, "AutomaticBufferFusionOp", "Add_2Cast_5Relu_4", 1700000000000050, {{2}, {1}}, {{3}});
  write_ge_op(my_token, "Neg", "Neg_11", 1700000000000060, {{1}}, {{-1}});
  write_ge_op(my_token, "MatMul", "MatMul_2", 1700000000000040, {{1}, {2}}, {{2}});
  write_ge_op(golden_token, "MatMul", "MatMul_2", 1700000000000041, {{1}, {2}, {0}}, {{2}});
  write_ge_op(golden_token, "Add", "Add_1", 1700000000000011, {{1, 2}, {3, 4}}, {{4, 6}});
  write_ge_op(golden_token, "Add", "Add_2", 1700000000000051, {{2}, {1}}, {{3}});
  write_ge_op(golden_token, "Cast", "Cast_5", 1700000000000052, {{3}}, {{3}});
  write_ge_op(golden_token, "Relu", "Relu_4", 1700000000000053, {{3}}, {{3}});
  write_ge_op(golden_token, "Sub", "Sub_12", 1700000000000054, {{3}}, {{3}});

  const MatchResult r = match_ge_vs_ge(golden.path(), mine.path(), std::nullopt);
  ASSERT_TRUE(r.fatal_error.empty()) << r.fatal_error;
  const auto add = rows_of(r, "Add.Add_1.");
  ASSERT_EQ(add.size(), 3u);
  EXPECT_EQ(add[0]->op_key, "add_1-aten.add.Tensor");
  EXPECT_NE(add[0]->golden_path.find("Add.Add_1.1.0.1700000000000011,inputs,0"), std::string::npos);
  EXPECT_EQ(add[0]->golden_op_type, "Add");

  const auto fused = rows_of(r, "Add_2Cast_5Relu_4");
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_NE(fused[0]->golden_path.find("Add.Add_2.1.0.1700000000000051,inputs,0"), std::string::npos);
  EXPECT_NE(fused[1]->golden_path.find("Add.Add_2.1.0.1700000000000051,inputs,1"), std::string::npos);
  EXPECT_NE(fused[2]->golden_path.find("Relu.Relu_4.1.0.1700000000000053,outputs,0"), std::string::npos);
  for (const RowSpec* row : fused) EXPECT_TRUE(row->match_note.empty()) << row->match_note;

  const auto mm = rows_of(r, "MatMul.MatMul_2.");
  ASSERT_EQ(mm.size(), 3u);  // the golden third input has no row of mine, so no my_path
  EXPECT_EQ(mm[0]->pairing_note, "inputs count differs: GE op has 2, golden GE op has 3; compared by position");
  EXPECT_TRUE(mm[2]->match_note.empty());
  EXPECT_EQ(mm[2]->direction, Direction::Output);

  EXPECT_TRUE(has_unmatched(r, "Neg_11", "no op of this name"));
  EXPECT_TRUE(has_unmatched(r, "Sub_12", "no counterpart"));
  EXPECT_FALSE(has_unmatched(r, "Cast_5", ""));
}

// How the real torchair lowers `addmm(bias, x, t(w))`: helper ops without a link, the linked Add
// last, "" for MatMulV2's unused optional inputs. Graph fusion (MatMulBiasAddFusionPass) leaves
// one dump, named after the MatMulV2, whose output's OriginalOp is the Add. `_log_softmax` has
// two scalar arguments that GE holds as attributes.
struct RealLowering : GeAndFxDumps {
  RealLowering() {
    const std::vector<OpText> ops = {
        {"arg0_1", "Data", {}, {""}},
        {"arg1_1", "Data", {}, {""}},
        {"arg2_1", "Data", {}, {""}},
        {"Transpose", "Transpose", {"arg0_1:0", "Const:0"}, {""}},
        {"MatMulV2", "MatMulV2", {"arg2_1:0", "Transpose:0", "", ""}, {""}},
        {"Mul", "Mul", {"MatMulV2:0", "Const_1:0"}, {""}},
        {"Add", "Add", {"Mul:0", "arg1_1:0"}, {"addmm-aten.addmm.default.OUTPUT.0"}},
        {"LogSoftmaxV2", "LogSoftmaxV2", {"Add:0"}, {"_log_softmax-aten._log_softmax.default.OUTPUT.0"}},
    };
    write_file(ge / "dynamo_original_graph_1_rank_0_pid_9_ts_20240101000000000000.txt", graph_text(ops));
    const std::string token = ge / "worldsize1_global_rank0/20240101010101/0/graph_1/1/0";
    write_ge_op(token, "Transpose", "Transpose", 1700000000000010, {{1, 2}}, {{1, 2}});
    toolkit::dump::DumpData fused;
    fused.set_op_name("MatMulV2");
    for (int i = 0; i < 3; ++i) add_input(&fused, kGeFloat, {2}, 8);
    add_output(&fused, kGeFloat, {2}, 8)->mutable_original_op()->set_name("Add");
    write_file(token + "/MatMulV2.MatMulV2.2.0.1700000000000020",
               ge_dump_bytes(fused, floats_bytes({1, 2, 3, 4, 5, 6, 7, 8})));
    write_ge_op(token, "LogSoftmaxV2", "LogSoftmaxV2", 1700000000000030, {{7, 8}}, {{-1.3f, -0.3f}});
    const std::string step = fx / "worldsize1_global_rank0/graph_1/0";
    write_fx_node(step, "addmm-aten.addmm.default", {{5, 6}, {1, 2}, {3, 4}}, {{7, 8}});
    write_fx_node(step, "t-aten.t.default", {{1, 2}}, {{1, 2}});
    write_fx_node(step, "_log_softmax-aten._log_softmax.default", {{7, 8}}, {{-1.3f, -0.3f}});
    for (int i = 1; i <= 2; ++i)
      write_file(step + "/_log_softmax-aten._log_softmax.default.INPUT." + std::to_string(i) + "." + kFxTs + ".npy",
                 npy_bytes({}, {static_cast<float>(i - 2)}));
  }
};

TEST(GeMatch, AGraphFusedOpIsComparedThroughItsOriginalOp) {
  RealLowering f;
  const MatchResult r = f.match();
  const auto rows = rows_of(r, "MatMulV2.MatMulV2.");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]->op_key, "addmm-aten.addmm.default");
  EXPECT_EQ(rows[0]->direction, Direction::Output);
  EXPECT_TRUE(rows[0]->golden && rows[0]->mine && rows[0]->match_note.empty());
  EXPECT_TRUE(has_unmatched(r, "rank0/MatMulV2 (inputs)", "fused op"));
}

TEST(GeMatch, HelperOpsOfALoweringSayWhoseTheyAre) {
  RealLowering f;
  const MatchResult r = f.match();
  EXPECT_TRUE(rows_of(r, "Transpose.Transpose.").empty());
  EXPECT_TRUE(has_unmatched(r, "rank0/Transpose", "helper op of the lowering of addmm-aten.addmm.default"));
  EXPECT_TRUE(has_unmatched(r, "rank0/t-aten.t.default", "no linked GE op"));
}

TEST(GeMatch, ScalarArgumentsFoldedIntoTheGeOpAreLeftOutAndListed) {
  RealLowering f;
  const MatchResult r = f.match();
  const auto rows = rows_of(r, "LogSoftmaxV2.LogSoftmaxV2.");
  ASSERT_EQ(rows.size(), 2u);  // input 0 and output 0
  for (const RowSpec* row : rows) {
    EXPECT_TRUE(row->golden && row->mine);
    EXPECT_TRUE(row->match_note.empty() && row->pairing_note.empty()) << row->match_note << row->pairing_note;
  }
  for (const char* index : {"1", "2"})
    EXPECT_TRUE(has_unmatched(r, std::string("rank0/_log_softmax-aten._log_softmax.default.INPUT.") + index,
                              "FX scalar argument, folded into GE op LogSoftmaxV2"));
  for (const auto& row : r.rows) EXPECT_TRUE(row.match_note.empty()) << row.op_key << ": " << row.match_note;
}

}  // namespace
}  // namespace diagnose::compare
