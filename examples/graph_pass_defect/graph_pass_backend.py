"""An example torch.compile backend: Inductor plus one custom post-grad graph pass,
CanonicalizeOperandOrder, that reorders the operands of commutative binary ops (last-computed
operand first) so that common-subexpression elimination sees equal expressions as equal. Its
table of commutative ops wrongly includes aten.sub.Tensor, so every `a - b` between two
computed tensors becomes `b - a`. The pass is always on: no fusion switch controls it.

    spec: {"backend": "graph_pass_backend:backend"} with examples/graph_pass_defect on sys.path
"""

from __future__ import annotations

import torch
from torch._inductor import config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

aten = torch.ops.aten
COMMUTATIVE = (aten.add.Tensor, aten.mul.Tensor, aten.maximum.default, aten.sub.Tensor)


def _computed(value) -> bool:
    """Graph inputs keep their order; only values computed in the graph are reordered."""
    return isinstance(value, torch.fx.Node) and value.op == "call_function"


class CanonicalizeOperandOrder(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        position = {node: i for i, node in enumerate(graph.nodes)}
        for node in graph.nodes:
            if node.op != "call_function" or node.target not in COMMUTATIVE or len(node.args) != 2:
                continue
            a, b = node.args
            if _computed(a) and _computed(b) and position[a] < position[b]:
                node.args = (b, a)

    def uuid(self) -> str:
        return "diagnose-example-canonicalize-operand-order-1"


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch(post_grad_custom_post_pass=CanonicalizeOperandOrder()):
        return compile_fx(gm, example_inputs)
