// Where NaN/Inf first appears in a dump (msprobe's nan_analyze rule): per rank, the first op
// call in execution order whose outputs hold NaN or Inf while its inputs do not. An op given a
// non-finite constant (a record's `nonfinite_constant`: masked_fill with -inf, a causal mask
// filled with -inf) writes it on purpose: it is no origin, and the ops that read it inherit it.
#pragma once

#include "steps/layer.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/engine/state.h"

namespace diagnose {

// What an origin's inputs were seen to be.
enum class NanOriginInputs {
  Finite,     // the call's inputs are in the dump, all finite: the op made the NaN/Inf
  NotDumped,  // the dump has no inputs for the call; every op output before it is finite
  NonFinite,  // no op made it: its first appearance is already an input of this op
};
std::string nan_origin_inputs_name(NanOriginInputs inputs);  // "finite", "not dumped", "non-finite"

struct NanOrigin {
  int rank = -1;       // -1: a dump without rank directories
  std::string side;    // set by the caller: "target", "golden"
  std::string op_key;  // the record's name (op_key, or output.{path})
  std::string op;      // the operator, when the dump says (aten.mm.default)
  std::string kind;    // "nan" when the outputs hold a NaN, else "inf"
  int64_t seq = 0;     // the call's position in execution order
  int graph = -1;
  int64_t step = 0;
  uint64_t nan = 0, inf = 0;  // over the call's outputs (NonFinite: over its inputs)
  NanOriginInputs inputs = NanOriginInputs::Finite;
  std::string module;
  // Whether the float64 truth of the outputs holding NaN/Inf is finite everywhere (the side's
  // NaN/Inf comes from its precision) or not (the value is NaN/Inf in float64 too); absent when
  // the dump has no truth for them, or the origin is already in the inputs.
  std::optional<bool> truth_finite;
};

// One origin per rank whose dump holds a NaN or Inf (records of kind "op" but for ops whose
// outputs are uninitialised memory, from their recorded statistics), in rank order; empty when
// every record is finite or the directory is no diagnose dump. `side` labels each origin.
std::vector<NanOrigin> find_nan_origins(const std::string& dump_dir, const std::string& side = "");

// "NaN first appears at mm_1-aten.mm.default on rank 0 (target; float64 truth finite there); golden
// stays finite": each origin, then each of `sides` (the labels that were searched) that has none;
// "" when there is no origin at all.
std::string nan_origin_summary(const std::vector<NanOrigin>& origins, const std::vector<std::string>& sides);

// The origins as a result field / evidence table: one object per origin.
nlohmann::json nan_origins_json(const std::vector<NanOrigin>& origins);

// A comparing step's NaN/Inf origins on both sides of its comparison: appended to the summary
// (nan_origin_summary), as the result field nan_origin (nan_origins_json; [] when both sides
// stay finite) and as an evidence table. Sides that are no diagnose dump are finite.
void report_nan_origins(const std::string& golden, const std::string& target, StepResult& result,
                        const std::string& golden_side = "golden", const std::string& target_side = "target");

}  // namespace diagnose
