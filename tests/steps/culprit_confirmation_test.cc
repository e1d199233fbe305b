// steps/judgement/culprit_confirmation.h decided on small outputs/ dumps and status.json files
// written here, each intervention run a stand-in that writes what a real one would: a state culprit
// whose forced writes leave a call failing (rejected), one whose state no node writes in place
// (unconfirmable), one the forced writes fix (confirmed), and a TorchAir GE op (unconfirmable, why).
#include "steps/judgement/culprit_confirmation.h"

#include <gtest/gtest.h>

#include "compare/npy.h"
#include "orchestrator/workflow/workflow_loader.h"
#include "tests/compare/test_files.h"

namespace diagnose {
namespace culprit_confirmation_test {

using testing::TempDir;

struct Record {
  int64_t step;
  std::string kind;  // final or state
  std::vector<float> values;
};

// An outputs/ dump: each record's tensor as a (2, 4) float32 file; state is buffers.k_cache.
void write_outputs(const std::string& dir, const std::vector<Record>& records) {
  std::vector<testing::F32Record> written;
  for (const Record& r : records)
    written.push_back({R"("kind": ")" + r.kind + R"(", "op_key": ")" + (r.kind == "final" ? "output" : "state") +
                           R"(", "path": ")" + (r.kind == "final" ? "" : "buffers.k_cache") + R"(", "step": )" +
                           std::to_string(r.step),
                       r.values});
  testing::write_f32_dump(dir, written);
}

// a run of `request` that ended well, having written `status` as its status.json
RunRecord succeeded(const RunRequest& request, const nlohmann::json& status) {
  testing::write_bytes(request.dir + "/status.json", status.dump());
  RunRecord record;
  static_cast<RunCommand&>(record) = request;
  record.status = RunStatus::Succeeded;
  return record;
}

const std::vector<float> kOut1 = {1, 2, 3, 4, 5, 6, 7, 8}, kOut2 = {2, 2, 2, 2, 2, 2, 2, 2};
const std::vector<float> kCache1 = {1, 0, 0, 0, 5, 0, 0, 0}, kCache2 = {1, 3, 0, 0, 5, 7, 0, 0};
const std::vector<float> kStale(8, 0), kWrong = {9, 9, 9, 9, 9, 9, 9, 9};

// Two calls of a decoder: eager's, and the compiled run's that never writes its cache (call 1's
// output matches, call 2's is computed from zeros).
const std::vector<Record> kEager = {
    {0, "final", kOut1}, {0, "state", kCache1}, {1, "final", kOut2}, {1, "state", kCache2}};
const std::vector<Record> kLost = {
    {0, "final", kOut1}, {0, "state", kStale}, {1, "final", kWrong}, {1, "state", kStale}};
// the cache written, but call 2's output still wrong: the lost write is not all that is wrong
const std::vector<Record> kStillWrong = {
    {0, "final", kOut1}, {0, "state", kCache1}, {1, "final", kWrong}, {1, "state", kCache2}};

struct Fixture {
  TempDir dir;
  Workflow workflow;
  State state;
  std::string golden, before;

  Fixture() {
    testing::write_bytes(dir / "model.py", "");
    testing::write_bytes(dir / "wf.yaml",
                         "model: {script: model.py}\nsteps:\n  - {id: graph, kind: graph_dump_compare}\n");
    Diagnostics diagnostics(dir / "wf.yaml");
    std::optional<Workflow> loaded = load_workflow(dir / "wf.yaml", diagnostics);
    for (const Diagnostic& d : diagnostics.list()) ADD_FAILURE() << format_diagnostic(d);
    workflow = *loaded;
    golden = dir / "golden/outputs";
    before = dir / "target/outputs";
    write_outputs(golden, kEager);
    write_outputs(before, kLost);
  }

  // Confirms `candidate` with intervention runs that write `outputs` and status.json `status`;
  // returns the step's result, failing as state_defect with the state as its culprit.
  StepResult confirm(const CulpritCandidate& candidate, const std::vector<Record>& outputs,
                     const nlohmann::json& status) {
    StepContext context(workflow, workflow.steps[0], state, dir / "run", [&](const std::vector<RunRequest>& requests) {
      std::vector<RunRecord> records;
      for (const RunRequest& request : requests) {
        write_outputs(request.dir + "/outputs", outputs);
        records.push_back(succeeded(request, status));
      }
      return records;
    });
    StepResult result;
    result.status = StepStatus::Fail;
    result.summary = "the compiled graph does not carry the state between calls";
    result.metrics = {{"category", "state_defect"}, {"culprit", candidate.op}, {"localized", false}};
    confirm_culprit(
        context, {candidate}, {golden, before, std::nullopt},
        [&](const std::string& name, const CulpritCandidate&) {
          RunRequest request;
          request.name = name;
          request.dir = context.run_dir_of(name);
          return request;
        },
        result);
    return result;
  }
};

CulpritCandidate lost_cache_write() {
  CulpritCandidate c;
  c.op = "state.buffers.k_cache";
  c.forced_writes = {"buffers.k_cache"};
  return c;
}

// status.json of an intervention run that found `writers` writing the cache in place, and
// compiled the graph's other node
nlohmann::json forced(const nlohmann::json& writers) {
  return {{"format", "diagnose-run-status"},
          {"state", "ok"},
          {"isolation",
           {{"graphs", 1},
            {"nodes", {{{"id", "g0.index_copy_"}, {"graph", 0}, {"op", "method index_copy_"}}}},
            {"compiled", {"g0.mm"}},
            {"pieces", nlohmann::json::array()},
            {"unmatched", nlohmann::json::array()},
            {"forced_writes", {{"buffers.k_cache", writers}}}}}};
}

TEST(CulpritConfirmation, AStateCulpritWhoseForcedWritesLeaveACallFailingIsRejected) {
  Fixture f;
  const StepResult result = f.confirm(lost_cache_write(), kStillWrong, forced({"g0.index_copy_"}));
  const nlohmann::json& confirmation = result.metrics["confirmation"];
  EXPECT_EQ(confirmation["outcome"], "rejected") << confirmation.dump(2);
  EXPECT_EQ(confirmation["runs"], 1);
  EXPECT_EQ(confirmation["forced_writes"], nlohmann::json{"buffers.k_cache"});
  EXPECT_EQ(confirmation["graph_nodes"], nlohmann::json{"g0.index_copy_"});
  EXPECT_EQ(confirmation["before"]["failed"], 3);  // call 1's state, call 2's output and state
  EXPECT_EQ(confirmation["after"]["failed"], 1);
  const nlohmann::json& attempt = confirmation["attempts"][0];
  EXPECT_EQ(attempt["call"], 1);
  EXPECT_FALSE(attempt.contains("rank")) << "forced on every rank: no rank of its own";
  EXPECT_NE(attempt["text"].get<std::string>().find("still diverge (failing output and state rows 3 → 1"),
            std::string::npos)
      << attempt["text"];
  EXPECT_NE(attempt["text"].get<std::string>().find("the lost writes do not explain the failure alone"),
            std::string::npos);
  // withdrawn: still a state_defect, no culprit; localized as the op rows said
  EXPECT_EQ(result.status, StepStatus::Fail);
  EXPECT_EQ(result.metrics["culprit"], nullptr);
  EXPECT_EQ(result.metrics["localized"], false);
  EXPECT_NE(result.summary.find("the differing state is not shown to cause the failure"), std::string::npos)
      << result.summary;
}

TEST(CulpritConfirmation, AStateCulpritNoNodeWritesInPlaceIsUnconfirmable) {
  Fixture f;
  // a write outside the compiled graphs: the run found no node writing the cache
  const StepResult result = f.confirm(lost_cache_write(), kEager, forced(nlohmann::json::array()));
  const nlohmann::json& confirmation = result.metrics["confirmation"];
  EXPECT_EQ(confirmation["outcome"], "unconfirmable") << confirmation.dump(2);
  EXPECT_EQ(confirmation["runs"], 1);
  EXPECT_EQ(confirmation["after"], nullptr);
  EXPECT_EQ(confirmation["attempts"][0]["reason"],
            "in intervention run confirm-1, no node of the run's graphs writes buffers.k_cache in place");
  EXPECT_EQ(result.metrics["culprit"], nullptr);
}

TEST(CulpritConfirmation, AStateCulpritWhoseForcedWritesFixEveryCallIsConfirmed) {
  Fixture f;
  const StepResult result = f.confirm(lost_cache_write(), kEager, forced({"g0.index_copy_"}));
  const nlohmann::json& confirmation = result.metrics["confirmation"];
  EXPECT_EQ(confirmation["outcome"], "confirmed") << confirmation.dump(2);
  EXPECT_EQ(result.metrics["culprit"], "state.buffers.k_cache");
  EXPECT_NE(result.findings.front().message.find("the outputs and state of calls 1–2 match eager"), std::string::npos)
      << result.findings.front().message;
}

TEST(CulpritConfirmation, ATorchAirGeOpSaysWhyNoRunCanTakeItOut) {
  Fixture f;
  compare::CompareResult compared;
  compared.my_kind = compare::DumpKind::GeDump;
  compare::Row row;
  row.spec.op_key = "Gelu_1";
  row.spec.rank = 0;
  row.verdict = compare::Verdict::Fail;
  compared.groups.push_back({});
  compared.groups.back().rows.push_back(row);
  const std::vector<CulpritCandidate> candidates = culprit_candidates(compared, "Gelu_1", {});
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_TRUE(candidates[0].ge_op);
  const StepResult result = f.confirm(candidates[0], kEager, forced({"g0.index_copy_"}));
  const nlohmann::json& attempt = result.metrics["confirmation"]["attempts"][0];
  EXPECT_EQ(result.metrics["confirmation"]["runs"], 0);
  EXPECT_EQ(attempt["rank"], 0);
  EXPECT_NE(attempt["reason"].get<std::string>().find("a TorchAir GE op"), std::string::npos) << attempt["reason"];
}

// A masked defect: the final outputs pass, so the intervention observes the candidate's own value
// (observed/<node>/<call>.npy) and judges it as the pass judged its row, against the same golden
// value and float64 truth. 1000 elements: the truth ratio rule's m is 2 for float32.
struct Observed {
  TempDir dir;
  CulpritCandidate candidate;
  std::vector<float> truth, eager;

  Observed() : truth(1000), eager(1000) {
    for (size_t i = 0; i < truth.size(); ++i) {
      truth[i] = 1.0f + 0.001f * static_cast<float>(i);
      eager[i] = truth[i] + ((i % 2) ? 1e-4f : -1e-4f);  // eager's rounding: rmse 1e-4
    }
    testing::write_npy_f32(dir / "golden.npy", eager, "(10, 100)");
    testing::write_npy_f32(dir / "truth.npy", truth, "(10, 100)");
    testing::write_npy_f32(dir / "before.npy", scaled(1.06f), "(10, 100)");
    compare::RowSpec spec;
    spec.op_key = "mm_1-aten.mm.default";
    spec.golden = compare::read_npy(dir / "golden.npy");
    spec.referee = compare::read_npy(dir / "truth.npy");
    spec.mine = compare::read_npy(dir / "before.npy");
    spec.golden_value_of = "g0.linear";
    candidate.op = spec.op_key;
    candidate.graph_nodes = {"g0.mul", "g0.linear"};
    candidate.step = 1;
    candidate.observe = "g0.linear";
    candidate.row.emplace().spec = spec;
  }
  std::vector<float> scaled(float factor) const {
    std::vector<float> out(truth);
    for (float& v : out) v *= factor;
    return out;
  }
  // the intervention run's value of the observed node at call 2, as a Linear's (1, 10, 100) output
  std::string run_observing(const std::vector<float>& value) {
    testing::write_npy_f32(dir / "run/observed/g0.linear/1.npy", value, "(1, 10, 100)");
    return dir / "run";
  }
};

TEST(CulpritConfirmation, AMaskedCulpritsOwnValueRunEagerlyPassesAgainstFloat64) {
  Observed o;
  const Observation seen = judge_observed_value(o.candidate, o.run_observing(o.eager), compare::Tolerances::defaults());
  ASSERT_TRUE(seen.row) << seen.error;
  EXPECT_EQ(seen.row->verdict, compare::Verdict::Pass) << nlohmann::json(seen.row->reasons).dump();
  EXPECT_TRUE(seen.row->shape_differs);  // the Linear's view of the mm's value: the same elements
  ASSERT_TRUE(seen.row->referee_rmse_mine);
  EXPECT_NEAR(*seen.row->referee_rmse_mine, 1e-4, 1e-6);
}

TEST(CulpritConfirmation, AMaskedCulpritsOwnValueStillWrongFails) {
  Observed o;
  // the defect upstream of the candidate, in compiled code: its value is still 6% off
  const Observation seen =
      judge_observed_value(o.candidate, o.run_observing(o.scaled(1.06f)), compare::Tolerances::defaults());
  ASSERT_TRUE(seen.row) << seen.error;
  EXPECT_EQ(seen.row->verdict, compare::Verdict::Fail);
}

TEST(CulpritConfirmation, AValueTheRunDidNotRecordIsNoObservation) {
  Observed o;
  const Observation seen = judge_observed_value(o.candidate, o.dir / "run", compare::Tolerances::defaults());
  EXPECT_FALSE(seen.row);
  EXPECT_EQ(seen.error, "the run recorded no value of g0.linear at call 2");
  o.candidate.observe.clear();
  EXPECT_EQ(judge_observed_value(o.candidate, o.run_observing(o.eager), compare::Tolerances::defaults()).error,
            "no node of it was observed");
}

// A user backend's pass scales a LayerNorm's output: that buffer holds no golden node's value, so
// the dump leaves it out (status.json's inductor_unmapped) and its reader, q_proj's addmm, is the
// first failing row. Run eagerly, the addmm changes nothing (rejected); its unmapped producer,
// the next candidate, is confirmed by one run.
TEST(CulpritConfirmation, TheUnmappedProducerOfARejectedCandidatesInputIsConfirmedInItsPlace) {
  Fixture f;
  const std::string target = f.dir / "target";
  const nlohmann::json made = {
      {"buffer", "buf3"},
      {"fx_nodes", {"var_mean", "add_1"}},
      {"reason", "traced from no unchanged node of Dynamo's graph"},
      {"graph_nodes", {"g0.embedding", "g0.layer_norm"}},
      {"sources", {{{"node", "add_1"}, {"module", "layers.0.norm"}, {"line", "model.py:9"}, {"code", "h = norm(x)"}}}},
      {"read_by", {"addmm-aten.addmm.default"}}};
  const nlohmann::json partial_sum = {{"buffer", "buf0"}, {"fx_nodes", {"var_mean"}}};  // no reason: never a candidate
  nlohmann::json in_decode = made;  // the pass changes the decode graph alike, where addmm fails too
  in_decode["graph_nodes"] = {"g1.embedding", "g1.layer_norm"};
  nlohmann::json elsewhere = made;  // a graph where addmm passes
  elsewhere["graph_nodes"] = {"g2.layer_norm"};
  testing::write_bytes(
      target + "/status.json",
      nlohmann::json({{"inductor_unmapped", {{"1", {partial_sum, made}}, {"3", {in_decode}}, {"5", {elsewhere}}}}})
          .dump());
  CulpritCandidate addmm, neg;
  addmm.op = "addmm-aten.addmm.default";
  addmm.graph_nodes = {"g0.linear"};
  addmm.graph = 1;
  addmm.failing_graphs = {1, 3};
  neg.op = "neg-aten.neg.default";
  neg.graph_nodes = {"g0.neg"};
  neg.graph = 1;
  const std::vector<CulpritCandidate> candidates = with_unmapped_producers({addmm, neg}, target);
  ASSERT_EQ(candidates.size(), kMaxConfirmationRuns);
  EXPECT_EQ(candidates[1].op, "buf3 of g0.layer_norm");
  EXPECT_EQ(candidates[1].producer_of, "addmm-aten.addmm.default");
  EXPECT_EQ(candidates[1].graph_nodes,
            (std::vector<std::string>{"g0.embedding", "g0.layer_norm", "g1.embedding", "g1.layer_norm"}));
  EXPECT_EQ(candidates[1].sources, (std::vector<std::string>{"module layers.0.norm model.py:9 `h = norm(x)`"}));
  EXPECT_EQ(with_unmapped_producers({neg}, target).size(), 1u);  // neg reads no unmapped buffer

  std::map<std::string, CulpritCandidate> asked;
  StepContext context(f.workflow, f.workflow.steps[0], f.state, f.dir / "run", [&](const std::vector<RunRequest>& rs) {
    std::vector<RunRecord> records;
    for (const RunRequest& request : rs) {
      const std::vector<std::string>& eager = asked[request.name].graph_nodes;
      const bool fixed = std::find(eager.begin(), eager.end(), "g0.layer_norm") != eager.end();
      write_outputs(request.dir + "/outputs", fixed ? kEager : kLost);
      nlohmann::json nodes = nlohmann::json::array(), compiled = nlohmann::json::array();
      for (const char* node : {"g0.embedding", "g0.layer_norm", "g0.linear", "g1.embedding", "g1.layer_norm"}) {
        nodes.push_back({{"id", node}, {"graph", 0}, {"op", "op"}});
        if (std::find(eager.begin(), eager.end(), node) == eager.end()) compiled.push_back(node);
      }
      records.push_back(succeeded(request, {{"format", "diagnose-run-status"},
                                            {"state", "ok"},
                                            {"isolation",
                                             {{"graphs", 1},
                                              {"nodes", nodes},
                                              {"compiled", compiled},
                                              {"pieces", nlohmann::json::array()},
                                              {"unmatched", nlohmann::json::array()}}}}));
    }
    return records;
  });
  StepResult result;
  result.status = StepStatus::Fail;
  result.metrics = {{"culprit", addmm.op}, {"localized", true}};
  confirm_culprit(
      context, candidates, {f.golden, f.before, std::nullopt},
      [&](const std::string& name, const CulpritCandidate& candidate) {
        asked[name] = candidate;
        RunRequest request;
        request.name = name;
        request.dir = context.run_dir_of(name);
        return request;
      },
      result);
  const nlohmann::json& confirmation = result.metrics["confirmation"];
  EXPECT_EQ(confirmation["outcome"], "confirmed");
  EXPECT_EQ(confirmation["runs"], 2);
  EXPECT_EQ(confirmation["attempts"][0]["outcome"], "rejected");
  EXPECT_EQ(confirmation["attempts"][1]["producer_of"], "addmm-aten.addmm.default");
  EXPECT_EQ(result.metrics["culprit"], "buf3 of g0.layer_norm");
  EXPECT_EQ(result.metrics["culprit_sources"], nlohmann::json({"module layers.0.norm model.py:9 `h = norm(x)`"}));
  EXPECT_NE(result.summary.find("culprit confirmed: with `buf3 of g0.layer_norm` (graph nodes g0.embedding, "
                                "g0.layer_norm, g1.embedding, g1.layer_norm; a buffer the alignment left unmapped that "
                                "`addmm-aten.addmm.default` reads) run eagerly, the rest compiled, calls 1–2 match"),
            std::string::npos)
      << result.summary;
}

}  // namespace culprit_confirmation_test
}  // namespace diagnose
