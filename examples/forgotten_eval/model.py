"""An MLP with dropout whose script forgets model.eval() before compiling it: the planted
known cause of examples/forgotten_eval/README.md.

python examples/forgotten_eval/model.py [--out OUT.pt] [--steps N]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


class DropoutMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(0.1), nn.Linear(64, 10))

    def forward(self, x):
        return torch.log_softmax(self.layers(x), dim=-1)


if __name__ == "__main__":
    args = example_loop.parser().parse_args()
    torch.manual_seed(0)
    model = DropoutMLP()  # planted: no .eval(), so nn.Dropout(0.1) is active
    example_loop.run("forgotten_eval", torch.compile(model), (8, 32), args)
