// Ops whose outputs are uninitialised memory (torch.empty and its relatives): their values are
// whatever the allocator left there, so no step judges them by value. The PyTorch plugin
// keeps the same list for the single-op check (diagnose_pytorch/uninitialized_ops.py; a test
// checks that the two agree).
#pragma once

#include <string>
#include <vector>

namespace diagnose::compare {

// The operator packets, any overload ("aten.empty_like" covers aten.empty_like.default and .out).
const std::vector<std::string>& uninitialized_op_packets();

// `op` names one of them: an operator ("aten.empty_like.default") or an op_key that ends in
// one ("empty_like-aten.empty_like.default", FX and compiled dumps; "net.0/aten.empty.memory_format#2", eager).
bool is_uninitialized_op(const std::string& op);

// The reason on a row of such an op (Verdict::NotJudged).
inline constexpr const char* kUninitializedMemory = "not judged: uninitialised memory";

}  // namespace diagnose::compare
