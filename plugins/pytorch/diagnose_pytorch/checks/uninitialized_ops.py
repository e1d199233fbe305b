"""Ops whose outputs are uninitialised memory (torch.empty and its relatives): the values are
whatever the allocator left there, so the single-op check does not judge them. The same list
as the comparison core's (compare/uninitialized_ops.cc); tests/python/plugin/test_uninitialized_ops.py
checks that the two agree."""

UNINITIALIZED_OP_PACKETS = frozenset(
    {
        "aten.empty",
        "aten.empty_like",
        "aten.empty_strided",
        "aten.empty_permuted",
        "aten.new_empty",
        "aten.new_empty_strided",
        "prims.empty",
        "prims.empty_strided",
        "prims.empty_permuted",
    }
)

UNINITIALIZED = "output is uninitialised memory"


def is_uninitialized_op(op: str) -> bool:
    """`op` is an operator of those packets, any overload ("aten.empty_like.default")."""
    packet, _, overload = op.rpartition(".")
    return bool(overload) and packet in UNINITIALIZED_OP_PACKETS
