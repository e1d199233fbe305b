"""A small MLP with a custom RMS-scaling operator, compiled with torch.compile, as a user would
write it. The operator's eager kernel is right; its fake (meta) implementation, which
torch.compile traces with, says the output is bfloat16 while the kernel returns the input's
dtype (see README.md).

    python examples/meta_defect/model.py [--out OUT.pt] [--steps N]
"""

import argparse

import torch
from torch import nn


@torch.library.custom_op("diagnose_example::rms_scale", mutates_args=())
def rms_scale(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


@rms_scale.register_fake
def _(x, weight):
    return x.new_empty(x.shape, dtype=torch.bfloat16)


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.norm_weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = rms_scale(torch.relu(self.up(x)), self.norm_weight)
        return self.down(h * 0.5 + 1.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = MLP().eval()
    compiled = torch.compile(model)
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("meta_defect output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
