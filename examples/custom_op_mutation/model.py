"""A small MLP with a custom scaling operator, compiled with torch.compile, as a user would write
it. The operator scales its input in place as well as returning a result, but is registered
with `mutates_args=()`: torch.compile trusts the schema and reorders a read of that input
past the call (see README.md).

    python examples/custom_op_mutation/model.py [--out OUT.pt] [--steps N] [--backend B]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


@torch.library.custom_op("diagnose_example::scaled_gate", mutates_args=())
def scaled_gate(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    x.mul_(scale)  # the planted defect: an in-place write the schema does not declare
    return torch.sigmoid(x)


@scaled_gate.register_fake
def _(x, scale):
    return torch.empty_like(x)


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.scale = nn.Parameter(0.5 + torch.rand(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.up(x)
        residual = torch.tanh(h) * 2.0  # read before the call in eager
        gate = scaled_gate(h, self.scale)
        return self.down(gate + residual)


if __name__ == "__main__":
    parser = example_loop.parser()
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args()
    torch.manual_seed(0)
    compiled = torch.compile(MLP().eval(), backend=args.backend)
    example_loop.run("custom_op_mutation", compiled, (4, 16), args)
