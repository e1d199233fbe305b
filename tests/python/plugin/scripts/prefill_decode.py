"""A decoder's calls under `dynamic=True`: a 4-token prompt, then 3 one-token calls, which Dynamo
compiles to a graph of their own (it specialises the size 1); only the one-token calls take the
GELU."""

import torch
from torch import nn


class PrefillDecode(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.down = nn.Linear(32, 8)

    def forward(self, x):
        h = self.up(x)
        return self.down(self.act(h) if x.shape[0] == 1 else torch.relu(h))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.compile(PrefillDecode().eval(), dynamic=True)
    with torch.no_grad():
        for call, tokens in enumerate((4, 1, 1, 1)):
            model(torch.randn(tokens, 16, generator=torch.Generator().manual_seed(100 + call)))
