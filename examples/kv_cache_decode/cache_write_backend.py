"""An example torch.compile backend: Inductor plus one custom post-grad graph pass,
EliminateDeadCopies, which erases copies whose result nothing reads. It forgets that a copy
into a graph input is the write-back of an input mutation (AOT Autograd's epilogue: here the
decoder's KV-cache buffers and its position counter): every value the call returns is still
right, but the state the next call reads is never written. The pass is always on: no fusion
switch controls it.

    spec: {"backend": "cache_write_backend:backend"} with examples/kv_cache_decode on sys.path
"""

from __future__ import annotations

import torch
from torch._inductor import config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

aten = torch.ops.aten


class EliminateDeadCopies(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        for node in list(graph.nodes):
            if node.op == "call_function" and node.target is aten.copy_.default and not node.users:
                graph.erase_node(node)

    def uuid(self) -> str:
        return "diagnose-example-eliminate-dead-copies-1"


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch(post_grad_custom_post_pass=EliminateDeadCopies()):
        return compile_fx(gm, example_inputs)
