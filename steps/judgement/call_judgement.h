// Calls of the compiled callable and the state they leave (docs/workflow.md, "Calls and state"):
// a comparison's rows grouped by call (the dumps' `step`), which calls match and which diverge,
// and each piece of state (a buffer, an input written in place) that differs from the golden's
// after a call, with the op and line that write it in eager.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "compare/judge.h"

namespace diagnose {

// "call 3": the dumps' step 2, numbered from 1 as every message numbers calls.
std::string call_name(int64_t step);

struct CallOutcome {
  int64_t step = 0;  // the dumps' step: call `step + 1` of the run
  uint64_t judged = 0, failed = 0;
  std::string first_failing;   // the first failing output's or op's name, in execution order
  std::string first_state;     // the first state that differs
  bool state_failed = false;   // some state after this call differs
  bool output_failed = false;  // some other row (an output, an op) fails
};

// One piece of state that differs after a call, at the first call it does.
struct StateDifference {
  int64_t step = 0;
  std::string path;     // buffers.k_cache, inputs.args.1
  std::string where;    // "in 32 of 512 elements (dim 2 at 0)"; "" when the tensors were not read
  std::string written;  // "aten.index_copy_.default at model.py:32 `...`": the golden run's last writer
  // Written in place by one run only (its record has no partner): "golden" or "target"; "" when both recorded it.
  std::string only_in;
};

struct CallJudgement {
  std::vector<CallOutcome> calls;  // by step
  std::vector<StateDifference> state;

  std::optional<int64_t> first_diverging_step() const;
  // The first call after which state differs while that call's outputs match: the graph does not
  // carry the state (verdict category state_defect).
  std::optional<int64_t> state_diverges_first() const;
  // "call 1 of 4 matches; calls 2–4 diverge (first at call 2: output); the state differs after calls
  // 1–4 (first after call 1: state.buffers.k_cache)"; "" for a single call.
  std::string text() const;
  // "calls 2–4", "call 2": the calls whose outputs or state fail; "" with a single call or none failing.
  std::string failing_calls_text() const;
  // "after call 1, buffer `k_cache` differs from eager in ...; written in eager by ..."
  std::vector<std::string> state_texts(const std::string& golden_side) const;
  nlohmann::json to_json() const;
};

// `compared` holds final outputs and state records (a run's outputs/ directory).
CallJudgement judge_calls(const compare::CompareResult& compared, const compare::Tolerances& tolerances);

// Names the writer of each differing state whose golden record names none (FX-level and compiled
// runs record no writer; eager runs do): the first op of `golden_dump` in that call whose output
// holds the state's value after the call (equal content hash), when the call changed that value.
// `golden_outputs` is the golden run's outputs/ directory, which holds its state records.
void attribute_state_writers(CallJudgement& judgement, const std::string& golden_outputs,
                             const std::string& golden_dump);

}  // namespace diagnose
