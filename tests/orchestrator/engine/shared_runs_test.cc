#include "orchestrator/engine/shared_runs.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

const nlohmann::json kEager = {{"mode", "eager"}, {"backend", "inductor"}, {"device", "cpu"}};

nlohmann::json with(nlohmann::json base, const nlohmann::json& patch) {
  base.merge_patch(patch);
  return base;
}

RunRequest request(const std::string& step, const std::string& name) {
  RunRequest r;
  r.name = name;
  r.argv = {"python", "-m", "diagnose_pytorch", "run", "/w/model.py"};
  r.cwd = "/w";
  r.dir = "/runs/x/steps/" + step + "/" + name;
  r.env = {{"DIAGNOSE_RUN_DIR", "/runs/x"}, {"DIAGNOSE_STEP", step}, {"DIAGNOSE_DUMP_DIR", r.dir + "/dump"}};
  return r;
}

std::string identity(const nlohmann::json& spec, RunRequest r) {
  r.spec_identity = spec_identity(spec.get<RunSpec>());
  return run_identity(r);
}

PlannedRun planned(const std::string& step, const std::string& name, const nlohmann::json& spec) {
  return {step, name, spec.get<RunSpec>(), request(step, name)};
}

// merged_needs on specs written as JSON.
std::optional<nlohmann::json> merged_specs(const nlohmann::json& a, const nlohmann::json& b) {
  std::optional<RunSpec> spec = merged_needs(a.get<RunSpec>(), b.get<RunSpec>());
  return spec ? std::optional<nlohmann::json>(*spec) : std::nullopt;
}

TEST(RunIdentity, IgnoresTheRunsOwnPlacesAndAnEmptySwitchList) {
  nlohmann::json spec = with(kEager, {{"output_dir", "/runs/x/steps/a/eager"}});
  nlohmann::json other = with(kEager, {{"output_dir", "/runs/x/steps/b/golden"}, {"switches", {{"inductor_off", {}}}}});
  EXPECT_EQ(identity(spec, request("a", "eager")), identity(other, request("b", "golden")));
}

TEST(RunIdentity, DiffersInWhatDecidesTheResult) {
  std::string base = identity(kEager, request("a", "eager"));
  EXPECT_EQ(run_identity(request("a", "eager")), "");  // not a plugin run
  EXPECT_NE(base, identity(with(kEager, {{"dtype", "float64"}}), request("a", "eager")));
  EXPECT_NE(base, identity(with(kEager, {{"switches", {{"inductor_off", {"r"}}}}}), request("a", "eager")));
  RunRequest env = request("a", "eager");
  env.env["EXAMPLE_KERNEL"] = "fast";
  EXPECT_NE(base, identity(kEager, env));
  RunRequest cwd = request("a", "eager");
  cwd.cwd = "/elsewhere";
  EXPECT_NE(base, identity(kEager, cwd));
  RunRequest args = request("a", "eager");
  args.argv.push_back("--steps");
  EXPECT_NE(base, identity(kEager, args));
}

TEST(RunIdentity, ARunInItsOwnDirectoryIsTheSameWhereverThatIs) {
  RunRequest target = request("graph", "target"), trial = request("fusion", "t0-0");
  target.cwd = target.dir;
  trial.cwd = trial.dir;
  EXPECT_EQ(identity(kEager, target), identity(kEager, trial));
  EXPECT_NE(identity(kEager, target), identity(kEager, request("graph", "target")));
}

TEST(RunIdentity, TheKthRunOfAConfigurationIsAnotherStepsKthNeverItsFirst) {
  RunRequest first = request("known_causes", "t811c9dc5-0"), second = request("known_causes", "t811c9dc5-1");
  second.repeat = 1;
  RunRequest other_second = request("fusion", "t811c9dc5-1"), third = request("fusion", "t811c9dc5-2");
  other_second.repeat = 1;
  third.repeat = 2;
  for (RunRequest* r : {&first, &second, &other_second, &third}) r->cwd = r->dir;
  EXPECT_NE(identity(kEager, first), identity(kEager, second));
  EXPECT_EQ(identity(kEager, second), identity(kEager, other_second));
  EXPECT_NE(identity(kEager, second), identity(kEager, third));
  RunRequest unrepeated = request("a", "eager");  // a first run's identity says nothing of repeats
  unrepeated.repeat = 0;
  EXPECT_EQ(identity(kEager, unrepeated), identity(kEager, request("a", "eager")));
}

TEST(MergedNeeds, AnOutputsOnlyRunIsCoveredByADumpThatOnlyObserves) {
  // Inductor's buffer dump compiles anew with its FX graph cache off: it covers no undumped run
  nlohmann::json compiled = with(kEager, {{"mode", "compiled"}});
  nlohmann::json outputs = with(compiled, {{"dump", {{"level", "none"}}}});
  nlohmann::json buffers = with(compiled, {{"dump", {{"level", "auto"}}}});
  EXPECT_FALSE(merged_specs(buffers, outputs));
  EXPECT_FALSE(merged_specs(outputs, buffers));
  nlohmann::json user = with(compiled, {{"backend", "fusion_backend:backend"}});
  EXPECT_FALSE(
      merged_specs(with(user, {{"dump", {{"level", "none"}}}}), with(user, {{"dump", {{"level", "compiled"}}}})));
  // the FX level replaces the backend; GE's dump is GE's
  EXPECT_FALSE(merged_specs(outputs, with(compiled, {{"dump", {{"level", "fx"}}}})));
  nlohmann::json torchair = with(compiled, {{"backend", "torchair"}});
  EXPECT_FALSE(merged_specs(with(torchair, {{"dump", {{"level", "none"}}}}),
                            with(torchair, {{"dump", {{"level", "compiled"}}}})));
  // eager: the ATen dump covers the outputs only when it holds the truth they ask for
  nlohmann::json aten = with(kEager, {{"dump", {{"level", "aten"}}}});
  nlohmann::json outputs_truth = with(kEager, {{"dump", {{"level", "none"}, {"truth", true}}}});
  EXPECT_FALSE(merged_specs(aten, outputs_truth));
  nlohmann::json aten_truth = with(aten, {{"dump", {{"truth", true}}}});
  EXPECT_EQ(merged_specs(aten_truth, outputs_truth), aten_truth);
  // nor when it leaves the final outputs out, or shadows other steps than they ask for
  EXPECT_FALSE(merged_specs(with(aten_truth, {{"dump", {{"final", false}}}}), outputs_truth));
  EXPECT_FALSE(merged_specs(with(aten_truth, {{"dump", {{"steps", {0}}}}}), outputs_truth));
}

TEST(MergedNeeds, CoversTruthStatisticsAndTheMetaCheck) {
  nlohmann::json aten = with(kEager, {{"dump", {{"level", "aten"}}}});
  nlohmann::json truth = with(kEager, {{"dump", {{"level", "aten"}, {"truth", true}}}});
  nlohmann::json meta =
      with(kEager, {{"dump", {{"level", "aten"}, {"stats_only", true}}}, {"checks", {{"meta", true}}}});
  std::optional<nlohmann::json> merged = merged_specs(aten, truth);
  ASSERT_TRUE(merged);
  merged = merged_specs(*merged, meta);
  ASSERT_TRUE(merged);
  EXPECT_EQ((*merged)["dump"], (nlohmann::json{{"level", "aten"}, {"truth", true}}));  // full covers stats_only
  EXPECT_EQ((*merged)["checks"], (nlohmann::json{{"meta", true}}));
  nlohmann::json stats = with(kEager, {{"dump", {{"level", "aten"}, {"stats_only", true}}}});
  EXPECT_EQ((*merged_specs(stats, stats))["dump"]["stats_only"], true);
}

TEST(MergedNeeds, KeepsApartOtherLevelsFiltersAndConfigurations) {
  nlohmann::json aten = with(kEager, {{"dump", {{"level", "aten"}}}});
  EXPECT_FALSE(merged_specs(aten, with(kEager, {{"dump", {{"level", "fx"}}}})));
  EXPECT_FALSE(merged_specs(aten, with(kEager, {{"dump", {{"level", "aten"}, {"include", {"add"}}}}})));
  EXPECT_FALSE(merged_specs(aten, with(aten, {{"dtype", "float64"}})));
  EXPECT_THROW(merged_specs(aten, with(aten, {{"checks", {{"other", 1}}}})), std::invalid_argument);  // no check
}

TEST(SharedRuns, PlannedRunsOfOneIdentityGetOneSpecAndTheFirstDirectory) {
  SharedRuns shared;
  PlannedRun eager = planned("single_op", "eager", with(kEager, {{"dump", {{"level", "aten"}}}}));
  PlannedRun golden = planned("eager_device", "golden", with(kEager, {{"dump", {{"level", "aten"}, {"truth", true}}}}));
  PlannedRun compiled = planned("graph", "target", with(kEager, {{"mode", "compiled"}}));
  shared.plan({eager, golden, compiled});
  nlohmann::json spec = shared.spec_for(eager);
  EXPECT_EQ(spec, nlohmann::json(shared.spec_for(golden)));
  EXPECT_EQ(spec["dump"]["truth"], true);
  EXPECT_EQ(shared.spec_for(compiled), compiled.spec);
  std::string merged = identity(spec, golden.request);
  EXPECT_EQ(merged, identity(spec, eager.request));
  EXPECT_EQ(shared.dir_for(merged), eager.request.dir);
  EXPECT_EQ(shared.dir_for(identity(nlohmann::json(compiled.spec), compiled.request)), compiled.request.dir);
  RunRequest elsewhere = golden.request;  // changed after planning: not planned, never redirected
  elsewhere.cwd = golden.request.dir;
  EXPECT_FALSE(shared.dir_for(identity(spec, elsewhere)));

  PlannedRun changed = golden;  // asked for otherwise than planned: its own spec
  changed.spec.dtype = "float64";
  EXPECT_EQ(shared.spec_for(changed), changed.spec);
  EXPECT_FALSE(shared.dir_for(identity(nlohmann::json(changed.spec), changed.request)));
}

TEST(SharedRuns, TheAllOnTrialIsTheGraphCompareUndumpedTarget) {
  SharedRuns shared;
  nlohmann::json compiled = with(kEager, {{"mode", "compiled"}});
  nlohmann::json outputs = with(compiled, {{"dump", {{"level", "none"}}}});
  PlannedRun target = planned("graph", "target", with(compiled, {{"dump", {{"level", "auto"}}}}));
  PlannedRun undumped = planned("graph", "target-undumped", outputs);
  PlannedRun all_on = planned("fusion", "t811c9dc5-0", outputs);
  for (PlannedRun* run : {&target, &undumped, &all_on}) run->request.cwd = run->request.dir;
  shared.plan({target, undumped, all_on});
  EXPECT_EQ(nlohmann::json(shared.spec_for(all_on)), outputs);
  EXPECT_EQ(shared.dir_for(identity(outputs, all_on.request)), undumped.request.dir);
  EXPECT_EQ(shared.dir_for(identity(nlohmann::json(target.spec), target.request)), target.request.dir);
  // a repeat of the all-on configuration, not planned: its own spec, in its own directory
  PlannedRun repeat = planned("fusion", "t811c9dc5-1", nlohmann::json(all_on.spec));
  repeat.request.cwd = repeat.request.dir;
  repeat.request.repeat = 1;
  EXPECT_EQ(shared.spec_for(repeat), repeat.spec);
  EXPECT_FALSE(shared.dir_for(identity(nlohmann::json(repeat.spec), repeat.request)));
}

TEST(SharedRuns, RepeatsAreSharedAcrossStepsInTheirOrder) {
  SharedRuns shared;
  nlohmann::json compiled = with(kEager, {{"mode", "compiled"}});
  nlohmann::json outputs = with(compiled, {{"dump", {{"level", "none"}}}});
  auto repeat_of = [](PlannedRun run, int repeat) {
    run.request.repeat = repeat;
    return run;
  };
  PlannedRun undumped = planned("graph", "target-undumped", outputs);
  PlannedRun ab_first = planned("known_causes", "t811c9dc5-0", outputs);
  PlannedRun ab_second = repeat_of(planned("known_causes", "t811c9dc5-1", outputs), 1);
  PlannedRun all_on_first = planned("fusion", "t811c9dc5-0", outputs);
  PlannedRun all_on_second = repeat_of(planned("fusion", "t811c9dc5-1", outputs), 1);
  shared.plan({undumped, ab_first, ab_second, all_on_first, all_on_second});
  // the first runs are the graph compare's undumped target; the second runs one run of their own
  for (const PlannedRun* first : {&ab_first, &all_on_first})
    EXPECT_EQ(shared.dir_for(identity(outputs, first->request)), undumped.request.dir);
  for (const PlannedRun* second : {&ab_second, &all_on_second}) {
    EXPECT_EQ(nlohmann::json(shared.spec_for(*second)), outputs);
    EXPECT_EQ(shared.dir_for(identity(outputs, second->request)), ab_second.request.dir);
  }
  // a third run, which no step planned, is nobody's
  EXPECT_FALSE(shared.dir_for(identity(outputs, repeat_of(planned("fusion", "t811c9dc5-2", outputs), 2).request)));
}

TEST(SharedRuns, APlannedRunDoneIsFoundWhereItRan) {
  SharedRuns shared;
  PlannedRun eager = planned("single_op", "eager", with(kEager, {{"dump", {{"level", "aten"}}}}));
  shared.plan({eager});
  std::string id = identity(eager.spec, eager.request);
  RunRecord record;
  record.name = "eager";
  record.dir = "/resumed/steps/single_op/eager";
  EXPECT_EQ(shared.done(id), nullptr);
  shared.add_done(id, "single_op", record);
  ASSERT_NE(shared.done(id), nullptr);
  EXPECT_EQ(shared.done(id)->step, "single_op");
  EXPECT_EQ(shared.dir_for(id), record.dir);
  shared.add_done("unplanned", "other", record);
  EXPECT_FALSE(shared.dir_for("unplanned"));
}

}  // namespace
}  // namespace diagnose
