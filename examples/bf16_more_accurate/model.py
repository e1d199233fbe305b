"""A gated activation and an RMS normalisation, element-wise chains and one reduction, compiled
with torch.compile, as a user would write it. Meant to be run in bfloat16 (run spec
`"dtype": "bfloat16"`): eager rounds every intermediate to bfloat16, Inductor fuses each chain
into one kernel that keeps the intermediates in float32 and rounds once (see README.md).

    python examples/bf16_more_accurate/model.py [--out OUT.pt] [--steps N] [--dtype bfloat16]
"""

import argparse

import torch
from torch import nn


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    parser.add_argument(
        "--dtype",
        choices=("float32", "bfloat16", "float64"),
        default="float32",
        help="run alone in this dtype (under diagnose the run spec's dtype wins)",
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    model = GatedNorm().eval().to(dtype)
    compiled = torch.compile(model)
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(8, 64, generator=torch.Generator().manual_seed(100 + step)).to(dtype)
            outputs.append(compiled(x))
    print("bf16_more_accurate output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
