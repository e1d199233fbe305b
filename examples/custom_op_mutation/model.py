"""A small MLP with a custom scaling operator, compiled with torch.compile, as a user would write
it. The operator scales its input in place as well as returning a result, but is registered
with `mutates_args=()`: torch.compile trusts the schema and reorders a read of that input
past the call (see README.md).

    python examples/custom_op_mutation/model.py [--out OUT.pt] [--steps N] [--backend B]
"""

import argparse

import torch
from torch import nn


@torch.library.custom_op("diagnose_example::scaled_gate", mutates_args=())
def scaled_gate(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    x.mul_(scale)  # the planted defect: an in-place write the schema does not declare
    return torch.sigmoid(x)


@scaled_gate.register_fake
def _(x, scale):
    return torch.empty_like(x)


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.scale = nn.Parameter(0.5 + torch.rand(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.up(x)
        residual = torch.tanh(h) * 2.0  # read before the call in eager
        gate = scaled_gate(h, self.scale)
        return self.down(gate + residual)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = MLP().eval()
    compiled = torch.compile(model, backend=args.backend)
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("custom_op_mutation output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
