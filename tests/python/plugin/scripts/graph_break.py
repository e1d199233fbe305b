"""A compiled function with a graph break in the middle (two Dynamo graphs)."""

import torch


def f(x):
    y = torch.sin(x) * 2
    torch._dynamo.graph_break()
    return torch.cos(y) + 1


if __name__ == "__main__":
    compiled = torch.compile(f)
    print(compiled(torch.linspace(-1, 1, 16)).sum().item())
