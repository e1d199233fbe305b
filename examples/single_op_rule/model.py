"""A pre-norm MLP block: LayerNorm, Linear, GELU, Linear, residual. Compiled with
rule_backend.py, whose planted GeluFusionPass turns every GELU into FastGelu.

    python examples/single_op_rule/model.py [--steps N]
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import rule_backend


class Block(nn.Module):
    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    args = parser.parse_args()

    torch.manual_seed(0)
    compiled = torch.compile(Block().eval(), backend=rule_backend.backend)
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(8, 32, generator=torch.Generator().manual_seed(100 + step))
            print(f"single_op_rule step {step} output[0, :4]:", compiled(x)[0, :4].tolist())


if __name__ == "__main__":
    main()
