"""A small conv net (conv, batch norm, ReLU, pooling, linear head) compiled with
torch.compile, as a user would write it.

    python examples/convnet/model.py [--out OUT.pt] [--steps N]
"""

import argparse

import torch
from torch import nn


class ConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = ConvNet()
    # Give batch norm non-trivial running statistics, then evaluate with them.
    with torch.no_grad():
        for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    model.eval()
    compiled = torch.compile(model)
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("convnet output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
