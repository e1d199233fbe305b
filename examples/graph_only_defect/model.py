"""A small MLP whose hidden state is scaled and shifted, `h * scale + shift`: a mul whose only
user is an add, which vendor_backend.py executes with its (wrong) fused multiply-add kernel.
Compiled with the vendor backend unless told otherwise.

    python examples/graph_only_defect/model.py [--out OUT.pt] [--steps N] [--backend vendor|eager]
"""

import argparse

import torch
from torch import nn

import vendor_backend


class Block(nn.Module):
    def __init__(self, dim=16, hidden=64):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.scale = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))
        self.shift = nn.Parameter(0.1 * torch.randn(hidden))
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = torch.relu(self.up(x))
        h = h * self.scale + self.shift
        return self.down(torch.tanh(h)) + x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    parser.add_argument("--backend", choices=("vendor", "eager"), default="vendor")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Block().eval()
    compiled = torch.compile(model, backend=vendor_backend.backend if args.backend == "vendor" else "eager")
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(8, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("graph_only_defect output[0, :4]:", outputs[0][0, :4].tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
