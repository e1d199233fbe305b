"""A small MLP with a mean-centring step, as a user would write it. Run alone (`python model.py
[--out OUT.pt] [--steps N] [--backend pass|inductor]`) it compiles with graph_pass_backend.py,
whose custom Inductor pass turns the centring `h - mean(h)` into `mean(h) - h` (see README.md)."""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402
import graph_pass_backend  # noqa: E402


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = torch.tanh(self.up(x))
        centred = h - h.mean(-1, keepdim=True)
        return self.down(centred * 2.0) + x


if __name__ == "__main__":
    args = example_loop.parser(backends=("pass", "inductor")).parse_args()
    torch.manual_seed(0)
    compiled = torch.compile(MLP().eval(), backend=graph_pass_backend.backend if args.backend == "pass" else "inductor")
    example_loop.run("graph_pass_defect", compiled, (4, 16), args)
