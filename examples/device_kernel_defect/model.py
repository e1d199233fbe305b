"""A small MLP with a custom RMSNorm operator whose kernel is chosen at run time, as device
libraries do: EXAMPLE_KERNEL=fast selects a "fast" kernel that computes in bfloat16 — the
configuration under test — and anything else the reference kernel (see README.md).

    [EXAMPLE_KERNEL=fast] python examples/device_kernel_defect/model.py [--out OUT.pt] [--steps N]
"""

import argparse
import os

import torch
from torch import nn


def rms_norm_reference(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rms_norm_fast(x, weight, eps):
    """Fast, and wrong for fp32 callers: the whole computation runs in bfloat16."""
    return rms_norm_reference(x.bfloat16(), weight.bfloat16(), eps).to(x.dtype)


@torch.library.custom_op("diagnose_example::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    kernel = rms_norm_fast if os.environ.get("EXAMPLE_KERNEL") == "fast" else rms_norm_reference
    return kernel(x, weight, eps)


@rms_norm.register_fake
def _(x, weight, eps):
    return torch.empty_like(x)


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.norm_weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(torch.relu(rms_norm(self.up(x), self.norm_weight, 1e-6)))


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
    print("device_kernel_defect output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
