"""A user torch.compile backend built on Inductor, as serving frameworks write theirs: a graph
pass of its own over the graph Dynamo hands it, then Inductor's compile_fx.

The pass ("attention scale folding") rewrites every scaled_dot_product_attention call to pass
its scale explicitly (1/sqrt(head_dim), what the op uses by default) and inserts a `mul` by one
in front of the output projection's input (a no-op node of its own, which shifts the names AOT
Autograd gives every node after it). Its planted defect: where the query is one token long (the
decode graphs of generate(); the prefill's query is the prompt), it folds the scale twice, so
the one-token attention is sharper than it should be. DECODE_BACKEND_DEFECT=off turns it off."""

import math
import operator
import os

import torch
from torch._inductor.compile_fx import compile_fx

SDPA = torch._C._nn.scaled_dot_product_attention


def _defect_on() -> bool:
    return os.environ.get("DECODE_BACKEND_DEFECT", "on") != "off"


def _one_token(query: torch.fx.Node) -> bool:
    value = query.meta.get("example_value")
    # a plain int: Dynamo specialises a length of one; a symbolic length is never read (no guard)
    return value is not None and value.dim() >= 2 and isinstance(value.shape[-2], int) and value.shape[-2] == 1


def fold_attention_scale(gm: torch.fx.GraphModule) -> None:
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not SDPA:
            continue
        query = node.args[0]
        scale = node.kwargs.get("scale") or 1 / math.sqrt(query.meta["example_value"].shape[-1])
        if _defect_on() and _one_token(query):
            scale = scale * scale  # folded twice: 1/head_dim instead of 1/sqrt(head_dim)
        node.kwargs = {**node.kwargs, "scale": scale}
        with gm.graph.inserting_after(node):
            identity = gm.graph.call_function(operator.mul, (node, 1.0))
        node.replace_all_uses_with(identity)
        identity.args = (node, 1.0)
    gm.graph.lint()
    gm.recompile()


def backend(gm: torch.fx.GraphModule, example_inputs):
    fold_attention_scale(gm)
    return compile_fx(gm, example_inputs)
