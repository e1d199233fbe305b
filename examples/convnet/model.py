"""A small conv net (conv, batch norm, ReLU, pooling, linear head) compiled with
torch.compile, as a user would write it.

    python examples/convnet/model.py [--out OUT.pt] [--steps N]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


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


if __name__ == "__main__":
    torch.manual_seed(0)
    model = ConvNet()
    # Give batch norm non-trivial running statistics, then evaluate with them.
    with torch.no_grad():
        for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    compiled = torch.compile(model.eval())
    example_loop.run("convnet", compiled, (2, 3, 16, 16))
