"""A scoring head with a custom softplus operator, compiled with torch.compile, as a user would
write it. The operator's eager (CPU) kernel is right; the decomposition registered for Inductor
is the textbook log(1 + exp(x)), which overflows to inf for x > 88 and returns 0 for x < -17
(see README.md).

    python examples/lowering_defect/model.py [--out OUT.pt] [--steps N]
"""

import sys
from pathlib import Path

import torch
from torch import nn
from torch._inductor.decomposition import register_decomposition

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


@torch.library.custom_op("diagnose_example::softplus", mutates_args=())
def softplus(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(x)


@softplus.register_fake
def _(x):
    return torch.empty_like(x)


@register_decomposition(torch.ops.diagnose_example.softplus.default)
def softplus_naive(x):
    return torch.log(1 + torch.exp(x))


class ScoringHead(nn.Module):
    def __init__(self, dim=16, classes=8, temperature=0.005):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, classes)
        self.temperature = temperature

    def forward(self, x):
        logits = self.score(torch.tanh(self.proj(x))) / self.temperature
        return softplus(logits).mean(-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    compiled = torch.compile(ScoringHead().eval())
    example_loop.run("lowering_defect", compiled, (4, 16))
