"""A repro script as people write them, without a `__main__` guard: it parses its arguments
(`--case` is required), registers a custom operator, defines the vendor-style backend it compiles
with, and runs the model, all at top level (see README.md).

    python examples/unguarded_script/model.py --case small [--steps N]
"""

import argparse

import torch
from torch import nn
from torch._inductor.compile_fx import compile_fx

parser = argparse.ArgumentParser()
parser.add_argument("--case", required=True, choices=("small", "wide"), help="the input's size")
parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
args = parser.parse_args()


@torch.library.custom_op("unguarded_example::soft_clip", mutates_args=())
def soft_clip(x: torch.Tensor, limit: float) -> torch.Tensor:
    return limit * torch.tanh(x / limit)


@soft_clip.register_fake
def _(x, limit):
    return torch.empty_like(x)


def fast_soft_clip(x, limit):
    """The backend's kernel: tanh by its Padé approximant u(27 + u²)/(27 + 9u²), close for |u| < 2."""
    u = x / limit
    return limit * u * (27 + u * u) / (27 + 9 * u * u)


def backend(gm: torch.fx.GraphModule, example_inputs):
    """Inductor, with soft_clip lowered to the backend's own kernel."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.unguarded_example.soft_clip.default:
            with gm.graph.inserting_before(node):
                fast = gm.graph.call_function(fast_soft_clip, node.args, node.kwargs)
            node.replace_all_uses_with(fast)
            gm.graph.erase_node(node)
    gm.recompile()
    return compile_fx(gm, example_inputs)


class ClippedHead(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, x):
        return self.out(soft_clip(self.proj(x) * 4, 1.0))


torch.manual_seed(0)
rows = {"small": 4, "wide": 64}[args.case]
model = ClippedHead().eval()
compiled = torch.compile(model, backend=backend)
with torch.no_grad():
    for step in range(args.steps):
        x = torch.randn(rows, 8, generator=torch.Generator().manual_seed(100 + step))
        print(f"unguarded_script output (step {step}):", compiled(x)[0].tolist())
