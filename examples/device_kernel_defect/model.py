"""A small MLP with a custom RMSNorm operator whose kernel is chosen at run time, as device
libraries do: EXAMPLE_KERNEL=fast selects a "fast" kernel that computes in bfloat16 — the
configuration under test — and anything else the reference kernel (see README.md).

    [EXAMPLE_KERNEL=fast] python examples/device_kernel_defect/model.py [--out OUT.pt] [--steps N]
"""

import os
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


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


if __name__ == "__main__":
    torch.manual_seed(0)
    compiled = torch.compile(MLP().eval())
    example_loop.run("device_kernel_defect", compiled, (4, 16))
