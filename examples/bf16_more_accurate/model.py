"""A gated activation and an RMS normalisation, element-wise chains and one reduction, compiled
with torch.compile, as a user would write it. Meant to be run in bfloat16 (run spec
`"dtype": "bfloat16"`): eager rounds every intermediate to bfloat16, Inductor fuses each chain
into one kernel that keeps the intermediates in float32 and rounds once (see README.md).

    python examples/bf16_more_accurate/model.py [--out OUT.pt] [--steps N] [--dtype bfloat16]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


class GatedNorm(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(dim))
        self.shift = nn.Parameter(0.3 * torch.randn(dim))
        self.gain = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x):
        h = x * self.scale + self.shift
        h = h * torch.sigmoid(h) * 1.7 + 0.1 * torch.tanh(h) - 0.05 * h
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return h * self.gain + 0.5 * x


if __name__ == "__main__":
    args = example_loop.parser(dtype="float32").parse_args()
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    compiled = torch.compile(GatedNorm().eval().to(dtype))
    example_loop.run("bf16_more_accurate", compiled, (8, 64), args, dtype)
