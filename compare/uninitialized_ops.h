// Ops whose outputs are uninitialised memory (torch.empty and its relatives): their values are
// whatever the allocator left there, so no step judges them by value. The PyTorch plugin
// keeps the same list for the single-op check (diagnose_pytorch/checks/uninitialized_ops.py; a test
// checks that the two agree).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compare/manifest.h"

namespace diagnose::compare {

// The operator packets, any overload ("aten.empty_like" covers aten.empty_like.default and .out).
const std::vector<std::string>& uninitialized_op_packets();

// `op` names one of them: an operator ("aten.empty_like.default") or an op_key that ends in
// one ("empty_like-aten.empty_like.default", FX and compiled dumps; "net.0/aten.empty.memory_format#2", eager).
bool is_uninitialized_op(const std::string& op);

// The match keys of `dump`'s input records that read such an op's output: the same tensor
// (dtype, shape and content hash, docs/dump-format.md) as an output of one of those ops recorded
// before them in the same graph and step. Their values are as arbitrary as that output's; an
// input that holds the same bytes by chance (zeros) loses only its input row, the op that made
// it is judged on its output.
std::set<std::string> uninitialized_inputs(const Manifest& dump);

// The reason on a row of such an op (Verdict::NotJudged).
inline constexpr const char* kUninitializedMemory = "not judged: uninitialised memory";

}  // namespace diagnose::compare
