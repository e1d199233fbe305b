"""A user backend built on Inductor, as serving frameworks write theirs: a graph pass of its own
(a second relu after each relu: a new node that changes no value, which shifts the names AOT
Autograd gives the nodes after it and which no node of Dynamo's graph made), then Inductor's
compile_fx."""

import torch
from torch._inductor.compile_fx import compile_fx


def wrapping_backend(gm, example_inputs):
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_after(node):
                again = gm.graph.call_function(torch.relu, (node,))
            node.replace_all_uses_with(again)
            again.args = (node,)
    gm.recompile()
    return compile_fx(gm, example_inputs)
