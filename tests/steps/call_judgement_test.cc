// Calls and state judged on small outputs/ dumps written here: a decoder whose cache buffer the
// target never writes, one that writes it at the wrong position, and an input written in place
// by the golden run only.
#include "steps/judgement/call_judgement.h"

#include <gtest/gtest.h>

#include "compare/match.h"
#include "tests/compare/test_files.h"

namespace diagnose {
namespace {

using testing::TempDir;

struct Record {
  int64_t step;
  std::string kind;  // final or state
  std::string path;
  std::vector<float> values;
  std::string extra = "";  // more JSON fields, starting with a comma
};

// An outputs/ dump: each record's tensor as a (2, 4) float32 file.
void write_outputs(const std::string& dir, const std::vector<Record>& records) {
  std::vector<testing::F32Record> written;
  for (const Record& r : records)
    written.push_back({R"("kind": ")" + r.kind + R"(", "op_key": ")" + (r.kind == "final" ? "output" : "state") +
                           R"(", "path": ")" + r.path + R"(", "step": )" + std::to_string(r.step) + r.extra,
                       r.values});
  testing::write_f32_dump(dir, written);
}

CallJudgement judged(const std::string& golden, const std::string& target) {
  compare::CompareOptions options;
  options.golden_path = golden;
  options.my_path = target;
  options.tolerances = compare::Tolerances::defaults();
  return judge_calls(compare::run_compare(options), options.tolerances);
}

const std::vector<float> kOut1 = {1, 2, 3, 4, 5, 6, 7, 8}, kOut2 = {2, 2, 2, 2, 2, 2, 2, 2};
const std::vector<float> kCacheAfter1 = {1, 0, 0, 0, 5, 0, 0, 0}, kCacheAfter2 = {1, 3, 0, 0, 5, 7, 0, 0};
const std::string kWriter = R"json(, "sources": [{"node": "aten.index_copy_.default", "line": "model.py:32", )json"
                            R"json("code": "cache.index_copy_(1, pos, k)"}])json";

TEST(CallJudgement, AStaleBufferIsNamedAfterTheCallWhoseOutputsStillMatch) {
  TempDir golden, target;
  write_outputs(golden.path(), {{0, "final", "", kOut1},
                                {0, "state", "buffers.cache", kCacheAfter1, kWriter},
                                {1, "final", "", kOut2},
                                {1, "state", "buffers.cache", kCacheAfter2, kWriter}});
  // the compiled run never writes the cache: its second output is computed from zeros
  write_outputs(target.path(), {{0, "final", "", kOut1},
                                {0, "state", "buffers.cache", std::vector<float>(8, 0)},
                                {1, "final", "", {9, 9, 9, 9, 9, 9, 9, 9}},
                                {1, "state", "buffers.cache", std::vector<float>(8, 0)}});
  const CallJudgement calls = judged(golden.path(), target.path());
  ASSERT_EQ(calls.calls.size(), 2u);
  EXPECT_FALSE(calls.calls[0].output_failed);
  EXPECT_TRUE(calls.calls[0].state_failed);
  EXPECT_TRUE(calls.calls[1].output_failed);
  EXPECT_EQ(calls.first_diverging_step(), 0);
  EXPECT_EQ(calls.state_diverges_first(), 0);
  EXPECT_EQ(calls.text(),
            "call 1 of 2 matches; call 2 diverges (first at call 2: output); the state differs after calls 1–2 "
            "(first after call 1: state.buffers.cache)");
  ASSERT_EQ(calls.state.size(), 1u);  // the first call after which it differs
  EXPECT_EQ(calls.state_texts("eager"),
            std::vector<std::string>{"after call 1, buffer `cache` differs from eager in 2 of 8 elements (dim 1 at 0); "
                                     "written in eager by aten.index_copy_.default at model.py:32 "
                                     "`cache.index_copy_(1, pos, k)`"});
  EXPECT_EQ(calls.to_json()["first_diverging_call"], 1);
}

TEST(CallJudgement, AWriteAtTheWrongIndexIsLocated) {
  TempDir golden, target;
  write_outputs(golden.path(), {{0, "final", "", kOut1}, {0, "state", "buffers.cache", kCacheAfter1}});
  // written at position 1 instead of 0
  write_outputs(target.path(), {{0, "final", "", kOut1}, {0, "state", "buffers.cache", {0, 1, 0, 0, 0, 5, 0, 0}}});
  const CallJudgement calls = judged(golden.path(), target.path());
  EXPECT_EQ(calls.text(), "");  // one call: nothing to tell apart
  EXPECT_EQ(calls.state_diverges_first(), 0);
  EXPECT_EQ(
      calls.state_texts("eager"),
      std::vector<std::string>{"after call 1, buffer `cache` differs from eager in 4 of 8 elements (dim 1 at 0–1)"});
}

TEST(CallJudgement, AnInputWrittenOnlyByTheGoldenRunIsAStateDifference) {
  TempDir golden, target;
  write_outputs(golden.path(), {{0, "final", "", kOut1}, {0, "state", "inputs.args.1", kCacheAfter1}});
  write_outputs(target.path(), {{0, "final", "", kOut1}});
  const CallJudgement calls = judged(golden.path(), target.path());
  ASSERT_EQ(calls.state.size(), 1u);
  EXPECT_EQ(calls.state[0].only_in, "golden");
  EXPECT_EQ(calls.state_diverges_first(), 0);
  EXPECT_EQ(
      calls.state_texts("eager"),
      std::vector<std::string>{"after call 1, input `args.1` was written in place by eager and not by the target"});
}

TEST(CallJudgement, MatchingCallsAndAnOutputThatDivergesFirst) {
  TempDir golden, target;
  write_outputs(golden.path(), {{0, "final", "", kOut1}, {1, "final", "", kOut2}, {2, "final", "", kOut1}});
  write_outputs(target.path(), {{0, "final", "", kOut1}, {1, "final", "", kOut1}, {2, "final", "", kOut1}});
  const CallJudgement calls = judged(golden.path(), target.path());
  EXPECT_EQ(calls.text(), "calls 1, 3 of 3 match; call 2 diverges (first at call 2: output)");
  EXPECT_EQ(calls.first_diverging_step(), 1);
  EXPECT_FALSE(calls.state_diverges_first());
}

}  // namespace
}  // namespace diagnose
