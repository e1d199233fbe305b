"""A small MLP whose hidden state is scaled and shifted, `h * scale + shift`: a mul whose only
user is an add, which vendor_backend.py executes with its (wrong) fused multiply-add kernel.
Compiled with the vendor backend unless told otherwise.

    python examples/graph_only_defect/model.py [--out OUT.pt] [--steps N] [--backend vendor|eager]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402
import vendor_backend  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim=16, hidden=64):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))
        self.shift = nn.Parameter(0.1 * torch.randn(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = torch.relu(self.up(x))
        h = h * self.scale + self.shift
        return self.down(torch.tanh(h)) + x


if __name__ == "__main__":
    args = example_loop.parser(backends=("vendor", "eager")).parse_args()
    torch.manual_seed(0)
    compiled = torch.compile(Block().eval(), backend=vendor_backend.backend if args.backend == "vendor" else "eager")
    example_loop.run("graph_only_defect", compiled, (8, 16), args)
