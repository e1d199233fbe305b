"""A small MLP compiled with torch.compile, as a user would write it.

python examples/mlp/model.py [--out OUT.pt] [--steps N]
"""

import argparse

import torch
from torch import nn


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
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
    compiled = torch.compile(model)
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(8, 32, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("mlp output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
