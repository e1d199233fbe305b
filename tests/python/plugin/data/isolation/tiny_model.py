"""A tiny model for subgraph isolation: two Dynamo graphs (a graph break between them); graph 0
holds a multiply feeding an add (`scaled`, `mixed`), the pair fma_backend.py computes wrongly;
graph 1 a multi-output op (`split`) and the selections of its outputs (`low`, `high`)."""

import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        scaled = h * 0.5
        mixed = scaled + h
        torch._dynamo.graph_break()
        low, high = self.fc2(mixed).split([1, 2], dim=-1)
        return torch.tanh(high) - low


def main():
    torch.manual_seed(0)
    model = Tiny()
    compiled = torch.compile(model)
    with torch.no_grad():
        print(compiled(torch.randn(2, 4)))


if __name__ == "__main__":
    main()
