"""A small MLP with a mean-centring step, as a user would write it. Run alone (`python model.py
[--out OUT.pt] [--steps N] [--backend pass|inductor]`) it compiles with Inductor, its post-grad custom-pass slot holding
graph_pass_backend.py's pass, which turns the centring `h - mean(h)` into `mean(h) - h` (README.md)."""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402
import graph_pass_backend  # noqa: E402  (it imports torch._inductor.config)


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
    if args.backend == "pass":  # the user's own pass, set in Inductor's slot for it
        torch._inductor.config.post_grad_custom_post_pass = graph_pass_backend.CanonicalizeOperandOrder()
    torch.manual_seed(0)
    compiled = torch.compile(MLP().eval(), backend="inductor")
    example_loop.run("graph_pass_defect", compiled, (4, 16), args)
