"""A float16 model whose eager run overflows: exp of activations past 11.1 is past 65504, the
largest float16 (examples/fp16_overflow/README.md).

python examples/fp16_overflow/model.py [--out OUT.pt] [--steps N]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


class ExpScore(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 16)
        with torch.no_grad():
            self.proj.weight.mul_(8.0)  # activations up to ~20

    def forward(self, x):
        h = self.proj(x)
        scores = torch.exp(h)  # planted: a softmax written by hand, without subtracting the max
        return scores / scores.sum(dim=-1, keepdim=True)


if __name__ == "__main__":
    args = example_loop.parser().parse_args()
    torch.manual_seed(0)
    model = ExpScore().eval()
    example_loop.run("fp16_overflow", torch.compile(model), (8, 32), args, dtype=torch.float16)
