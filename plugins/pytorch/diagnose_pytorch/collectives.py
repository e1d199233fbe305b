"""torch.distributed's ops: the functional collectives Dynamo traces dist.all_reduce and friends
into (_c10d_functional.all_reduce, all_gather_into_tensor, reduce_scatter_tensor, wait_tensor)
and the c10d ones eager mode calls. They are torch's own, not a user's custom ops, and need
their ranks' process group to run."""

COLLECTIVE = "a collective: it needs its ranks' process group, so the graph compare judges it per rank and across ranks"
_NAMESPACES = ("_c10d_functional.", "c10d_functional.", "c10d.")


def is_collective(op: str) -> bool:
    """Whether `op` ("_c10d_functional.all_reduce.default") is one of torch.distributed's."""
    return op.startswith(_NAMESPACES)
