"""A small MLP with a custom RMS-scaling operator, compiled with torch.compile, as a user would
write it. The operator's eager kernel is right; its fake (meta) implementation, which
torch.compile traces with, says the output is bfloat16 while the kernel returns the input's
dtype (see README.md).

    python examples/meta_defect/model.py [--out OUT.pt] [--steps N]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


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


if __name__ == "__main__":
    torch.manual_seed(0)
    compiled = torch.compile(MLP().eval())
    example_loop.run("meta_defect", compiled, (4, 16))
