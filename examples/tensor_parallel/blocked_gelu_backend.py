"""An example torch.compile backend: Inductor plus one custom post-grad graph pass, FuseBlockedGelu,
that swaps the model's bias-GELU for a "vendor" kernel working in blocks of 8 columns. The
kernel handles whole blocks right and adds the bias twice to the columns of a last, partial
block: a shard whose width is a multiple of 8 (rank 0's 16 columns) is right, one that is not
(rank 1's 12 columns) is wrong. The pass is always on: no fusion switch controls it.

    spec: {"backend": "blocked_gelu_backend:backend"} with examples/tensor_parallel on sys.path
"""

from __future__ import annotations

import torch
from torch._inductor import config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

BLOCK = 8


@torch.library.custom_op("diagnose_example::bias_gelu_blocked", mutates_args=())
def bias_gelu_blocked(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    whole = x.shape[-1] // BLOCK * BLOCK
    y = x + bias
    tail = y[..., whole:] + bias[whole:]
    return torch.nn.functional.gelu(torch.cat([y[..., :whole], tail], dim=-1))


@bias_gelu_blocked.register_fake
def _(x, bias):
    return torch.empty_like(x)


class FuseBlockedGelu(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.op == "call_function" and node.target == torch.ops.diagnose_example.bias_gelu.default:
                node.target = torch.ops.diagnose_example.bias_gelu_blocked.default

    def uuid(self) -> str:
        return "diagnose-example-fuse-blocked-gelu-1"


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    with inductor_config.patch(post_grad_custom_post_pass=FuseBlockedGelu()):
        return compile_fx(gm, example_inputs)
