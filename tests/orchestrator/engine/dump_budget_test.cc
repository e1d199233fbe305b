#include "orchestrator/engine/dump_budget.h"
#include "runspec/plugin_status.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>

#include "orchestrator/engine/shared_runs.h"

namespace diagnose {
namespace {

const nlohmann::json kEagerAten = {
    {"mode", "eager"}, {"backend", "inductor"}, {"device", "cpu"}, {"dump", {{"level", "aten"}}}};

nlohmann::json with(nlohmann::json base, const nlohmann::json& patch) {
  base.merge_patch(patch);
  return base;
}

PlannedRun planned(const std::string& step, const std::string& name, const nlohmann::json& spec) {
  RunRequest r;
  r.name = name;
  r.argv = {"python", "-m", "diagnose_pytorch", "run", "/w/model.py"};
  r.cwd = "/w";
  r.dir = "/runs/x/steps/" + step + "/" + name;
  return {step, name, spec.get<RunSpec>(), r};
}

std::string level(const nlohmann::json& spec) { return resolved_dump_level(spec.get<RunSpec>()); }
bool takes_share(const nlohmann::json& spec) { return takes_dump_share(spec.get<RunSpec>()); }

TEST(DumpBudget, AutoLevelsResolveAsThePluginDoes) {
  EXPECT_EQ(level(nlohmann::json{{"mode", "eager"}}), "aten");
  EXPECT_EQ(level(nlohmann::json{{"mode", "compiled"}, {"backend", "inductor"}}), "compiled");
  EXPECT_EQ(level(nlohmann::json{{"mode", "compiled"}, {"backend", "aot_eager"}}), "fx");
  EXPECT_EQ(level(nlohmann::json{{"mode", "compiled"}, {"backend", "my.pkg:backend"}}), "none");
  EXPECT_EQ(level(nlohmann::json{{"mode", "compiled"}, {"isolation", {{"eager_nodes", nlohmann::json::array()}}}}),
            "none");
  EXPECT_EQ(level(nlohmann::json{{"mode", "compiled"}, {"dump", {{"level", "fx"}}}}), "fx");
  // as status.json echoes a spec: unset fields null
  EXPECT_EQ(level(nlohmann::json{{"mode", "compiled"}, {"backend", "inductor"}, {"isolation", nullptr}}), "compiled");
}

TEST(DumpBudget, OnlyOpDumpsKeepingTensorsWithoutABudgetOfTheirOwnTakeAShare) {
  EXPECT_TRUE(takes_share(kEagerAten));
  EXPECT_TRUE(takes_share(nlohmann::json{{"mode", "compiled"}, {"backend", "inductor"}}));
  EXPECT_FALSE(takes_share(with(kEagerAten, {{"dump", {{"stats_only", true}}}})));
  EXPECT_FALSE(takes_share(with(kEagerAten, {{"dump", {{"max_bytes", 1000}}}})));
  EXPECT_FALSE(takes_share(with(kEagerAten, {{"dump", {{"level", "none"}}}})));
  EXPECT_FALSE(takes_share(nlohmann::json{{"mode", "compiled"}, {"backend", "torchair"}}));  // GE's own dump
}

TEST(DumpBudget, SplitsEvenlyOverTheDistinctPlannedRunsThatKeepTensors) {
  PlannedRun eager = planned("single_op", "eager", kEagerAten);
  PlannedRun golden = planned("eager_device", "golden", with(kEagerAten, {{"dump", {{"truth", true}}}}));
  PlannedRun target =
      planned("graph", "target", with(kEagerAten, {{"mode", "compiled"}, {"dump", {{"level", "auto"}}}}));
  PlannedRun outputs = planned("fusion", "t0", with(kEagerAten, {{"mode", "compiled"}, {"dump", {{"level", "none"}}}}));
  SharedRuns shared;
  shared.plan({eager, golden, target, outputs});  // eager and golden are one run
  nlohmann::json budget = plan_dump_budget(3000, {eager, golden, target, outputs}, shared);
  EXPECT_EQ(budget, nlohmann::json({{"limit_bytes", 3000}, {"runs", 2}, {"per_run_bytes", 1500}}));
  EXPECT_TRUE(plan_dump_budget(0, {eager}, shared).is_null());

  State state;
  state.dump_budget = budget;
  RunSpec spec = target.spec;
  apply_dump_share(state, spec);
  EXPECT_EQ(spec.dump->max_bytes, 1500);
  RunSpec own = with(kEagerAten, {{"dump", {{"max_bytes", 7}}}}).get<RunSpec>();
  apply_dump_share(state, own);
  EXPECT_EQ(own.dump->max_bytes, 7);
  RunSpec unbounded = kEagerAten.get<RunSpec>();
  apply_dump_share(State{}, unbounded);
  EXPECT_FALSE(unbounded.dump->max_bytes);
}

TEST(DumpBudget, EachRankOfARunIsADumpSoAllRanksTogetherStayWithinTheLimit) {
  PlannedRun golden = planned("graph", "golden", kEagerAten);
  PlannedRun target = planned("graph", "target", with(kEagerAten, {{"mode", "compiled"}}));
  PlannedRun single = planned("single_op", "fx", with(kEagerAten, {{"mode", "compiled"}, {"backend", "aot_eager"}}));
  SharedRuns shared;
  shared.plan({golden, target, single});
  // graph's runs have 2 ranks each, single_op's run one: 5 dumps
  nlohmann::json budget = plan_dump_budget(3000, {golden, target, single}, shared, {{"graph", 2}, {"single_op", 1}});
  EXPECT_EQ(budget, nlohmann::json({{"limit_bytes", 3000}, {"runs", 3}, {"per_run_bytes", 600}, {"rank_dumps", 5}}));
  EXPECT_EQ(dump_budget_text(budget),
            "At most 3000 bytes of tensor files for this diagnosis (defaults.dump_budget): 600 bytes for each of its 5 "
            "op dump(s) keeping tensors (3 runs, each rank of a run dumping its own).");
  State state;
  state.dump_budget = budget;
  RunSpec spec = target.spec;
  apply_dump_share(state, spec);
  EXPECT_EQ(spec.dump->max_bytes, 600);  // each rank's dump: 2 ranks x 600 of the run
  // the plugin's own tools run in a world of one rank
  PlannedRun tool = planned("graph", "ops", kEagerAten);
  tool.request.argv = {"python", "-m", "diagnose_pytorch", "ops", "/w/model.py"};
  SharedRuns alone;
  alone.plan({tool});
  EXPECT_EQ(plan_dump_budget(3000, {tool}, alone, {{"graph", 2}})["per_run_bytes"], 3000);
}

TEST(DumpBudget, TheOutcomeOfAMultiRankRunCountsEveryRanksDump) {
  namespace fs = boost::filesystem;
  const fs::path root = fs::temp_directory_path() / fs::unique_path("dump-budget-%%%%%%%%");
  RunRecord target;
  target.name = "target";
  target.ranks = 2;
  target.dir = (root / "target").string();
  fs::create_directories(target.dir);
  const nlohmann::json spec = {{"dump", {{"max_bytes", 600}}}};
  write_file_atomically(target.dir + "/status.json",
                        nlohmann::json({{"spec", spec}, {"dump", {{"written_bytes", 500}}}}).dump());
  write_file_atomically(
      target.dir + "/status_rank1.json",
      nlohmann::json(
          {{"spec", spec}, {"dump", {{"written_bytes", 590}, {"budget_reached", true}, {"not_kept", {{"budget", 3}}}}}})
          .dump());
  State state;
  state.dump_budget = {{"limit_bytes", 3000}, {"runs", 3}, {"per_run_bytes", 600}, {"rank_dumps", 5}};
  StepResult graph;
  graph.id = "graph";
  graph.runs = {target};
  state.steps = {graph};
  record_dump_outcome(state);
  EXPECT_EQ(state.dump_budget["written_bytes"], 1090);
  EXPECT_EQ(
      state.dump_budget["left_out"],
      nlohmann::json::parse(
          R"([{"step": "graph", "run": "target", "rank": 1, "limit_bytes": 600, "written_bytes": 590, "records": 3}])"));
  fs::remove_all(root);
}

TEST(DumpBudget, TheOutcomeSaysWhatTheDumpsWroteAndWhatTheBudgetLeftOut) {
  namespace fs = boost::filesystem;
  const fs::path root = fs::temp_directory_path() / fs::unique_path("dump-budget-%%%%%%%%");
  auto run = [&](const std::string& name, const nlohmann::json& dump) {
    RunRecord record;
    record.name = name;
    record.dir = (root / name).string();
    fs::create_directories(record.dir);
    nlohmann::json status = {{"spec", {{"dump", {{"max_bytes", 1500}}}}}, {"dump", dump}};
    write_file_atomically(record.dir + "/status.json", status.dump());
    return record;
  };
  State state;
  state.dump_budget = {{"limit_bytes", 3000}, {"runs", 2}, {"per_run_bytes", 1500}};
  StepResult graph;
  graph.id = "graph";
  graph.runs = {run("golden", {{"written_bytes", 1400}, {"budget_reached", true}, {"not_kept", {{"budget", 12}}}}),
                run("target", {{"written_bytes", 600}, {"budget_reached", false}})};
  StepResult fusion;  // the same target shared by a later step counts once
  fusion.id = "fusion";
  fusion.runs = {graph.runs[1]};
  fusion.runs[0].from_step = "graph";
  state.steps = {graph, fusion};
  record_dump_outcome(state);
  EXPECT_EQ(state.dump_budget["written_bytes"], 2000);
  EXPECT_EQ(state.dump_budget["left_out"],
            nlohmann::json::parse(
                R"([{"step": "graph", "run": "golden", "limit_bytes": 1500, "written_bytes": 1400, "records": 12}])"));
  fs::remove_all(root);

  nlohmann::json planned = {{"limit_bytes", 1 << 30}, {"runs", 3}, {"per_run_bytes", (1 << 30) / 3}};
  EXPECT_EQ(dump_budget_text(planned),
            "At most 1024.0 MiB of tensor files for this diagnosis (defaults.dump_budget): 341.3 MiB for each of its 3 "
            "op dump(s) keeping tensors.");
  planned["written_bytes"] = 700 << 20;
  planned["left_out"] = nlohmann::json::array();
  EXPECT_EQ(dump_budget_text(planned).substr(dump_budget_text(planned).find(" The dumps")),
            " The dumps wrote 700.0 MiB. Every record kept its tensor.");
  planned["left_out"] = state.dump_budget["left_out"];
  EXPECT_NE(dump_budget_text(planned).find(
                "The budget was reached: these dumps kept statistics only of the records whose tensors no longer fit"),
            std::string::npos);
  EXPECT_EQ(dump_budget_text(nullptr), "");
}

TEST(DumpBudget, TheOutcomeSaysWhatTheWholeRunDirectoryHoldsAgainstTheBudget) {
  namespace fs = boost::filesystem;
  const fs::path root = fs::temp_directory_path() / fs::unique_path("dump-budget-%%%%%%%%");
  fs::create_directories(root / "steps/graph/golden/dump/tensors");
  fs::create_directories(root / "steps/graph/golden/outputs/tensors");
  write_file_atomically((root / "steps/graph/golden/dump/tensors/0.npy").string(), std::string(1000, 'd'));
  write_file_atomically((root / "steps/graph/golden/outputs/tensors/0.npy").string(), std::string(300, 'o'));
  fs::create_hard_link(root / "steps/graph/golden/outputs/tensors/0.npy", root / "steps/graph/golden/outputs/1.npy");
  write_file_atomically((root / "state.json").string(), std::string(50, 's'));
  State state;
  state.run_dir = root.string();
  state.dump_budget = {{"limit_bytes", 1200}, {"runs", 1}, {"per_run_bytes", 1200}};
  record_dump_outcome(state, {1, 300});
  EXPECT_EQ(state.dump_budget["run_directory"], nlohmann::json({{"bytes", 1350},
                                                                {"dumps_bytes", 1000},
                                                                {"outputs_bytes", 300},
                                                                {"other_bytes", 50},
                                                                {"linked_files", 1},
                                                                {"linked_bytes", 300}}));
  const std::string text = dump_budget_text(state.dump_budget);
  EXPECT_EQ(text.substr(text.find(" The run directory")),
            " The run directory holds 1350 bytes (op dumps 1000 bytes, final outputs 300 bytes, the rest 50 bytes; 1 "
            "tensor files equal to one kept before are stored once, 300 bytes saved): 150 bytes over the budget, the "
            "final outputs of every run being kept whole outside the op dumps' shares.");
  state.dump_budget["limit_bytes"] = 2000;
  EXPECT_NE(dump_budget_text(state.dump_budget)
                .find("the rest 50 bytes; 1 tensor files equal to one kept before are "
                      "stored once, 300 bytes saved): within the budget."),
            std::string::npos);
  fs::remove_all(root);
}

TEST(DumpBudget, ABudgetReachedIsReadFromAnyStatusWithoutThrowing) {
  EXPECT_TRUE(parse_plugin_status({{"dump", {{"budget_reached", true}}}}).dump.budget_reached);
  EXPECT_FALSE(parse_plugin_status({{"dump", {{"budget_reached", false}}}}).dump.budget_reached);
  EXPECT_FALSE(parse_plugin_status({{"dump", {{"budget_reached", "yes"}}}}).dump.budget_reached);
  EXPECT_FALSE(parse_plugin_status({{"dump", "written"}}).dump.budget_reached);
  EXPECT_FALSE(parse_plugin_status(nullptr).dump.budget_reached);
}

}  // namespace
}  // namespace diagnose
