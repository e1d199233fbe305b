"""A small MLP with a mean-centring step, compiled with torch.compile, as a user would write
it; run alone it compiles with graph_pass_backend.py, whose custom Inductor pass turns the
centring `h - mean(h)` into `mean(h) - h` (see README.md).

    python examples/graph_pass_defect/model.py [--out OUT.pt] [--steps N] [--backend pass|inductor]
"""

import argparse

import torch
from torch import nn

import graph_pass_backend


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        h = torch.tanh(self.up(x))
        centred = h - h.mean(-1, keepdim=True)
        return self.down(centred * 2.0) + x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    parser.add_argument("--backend", choices=("pass", "inductor"), default="pass")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = MLP().eval()
    compiled = torch.compile(model, backend=graph_pass_backend.backend if args.backend == "pass" else "inductor")
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("graph_pass_defect output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
