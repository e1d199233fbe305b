"""A small MLP compiled with torch.compile, as a user would write it.

python examples/mlp/model.py [--out OUT.pt] [--steps N]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


class MLP(nn.Module):
    def __init__(self, dims=(32, 64, 64, 10)):
        super().__init__()
        layers = []
        for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(d_in, d_out))
            if i < len(dims) - 2:
                layers.append(nn.GELU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return torch.log_softmax(self.layers(x), dim=-1)


if __name__ == "__main__":
    parser = example_loop.parser()
    parser.add_argument(
        "--perturb-weight",
        type=float,
        default=0.0,
        help="scale the last layer's first weight row by (1 + this): a planted regression "
        "(a 'new model version') for the CI gate tests",
    )
    args = parser.parse_args()
    torch.manual_seed(0)
    model = MLP().eval()
    if args.perturb_weight:
        with torch.no_grad():
            model.layers[-1].weight[0].mul_(1 + args.perturb_weight)
    example_loop.run("mlp", torch.compile(model), (8, 32), args)
