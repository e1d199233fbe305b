"""A user backend built on Inductor, as serving frameworks write theirs: a graph pass of its own
(a multiply by one after each relu: new nodes, which shift the names AOT Autograd gives the
nodes after them), then Inductor's compile_fx."""

import operator

import torch
from torch._inductor.compile_fx import compile_fx


def wrapping_backend(gm, example_inputs):
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_after(node):
                identity = gm.graph.call_function(operator.mul, (node, 1.0))
            node.replace_all_uses_with(identity)
            identity.args = (node, 1.0)
    gm.recompile()
    return compile_fx(gm, example_inputs)
