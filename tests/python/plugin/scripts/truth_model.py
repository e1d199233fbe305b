"""A small model for the float64 truth tests (test_truth_dump.py): Linear, an in-place op
through a view, an RMSNorm that upcasts with `.to(torch.float32)` and casts back, a LayerNorm,
a softmax, and a dropout on a side output. `--graph-break` adds an `.item()` in forward (two
Dynamo graphs); `--calls N` calls the compiled model N times.

The upcast dtype is an attribute (`Model.upcast`), so a test can rebuild the same model in
float64 (`upcast = torch.float64`) as the reference for the truth."""

import argparse

import torch
from torch import nn

WIDTH = 32


class RMSNorm(nn.Module):
    upcast = torch.float32

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(width))

    def forward(self, x):
        dtype = x.dtype
        h = x.to(self.upcast)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * h.to(dtype)


class Model(nn.Module):
    def __init__(self, graph_break: bool = False):
        super().__init__()
        self.graph_break = graph_break
        self.fc = nn.Linear(16, WIDTH)
        self.norm = RMSNorm(WIDTH)
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, 8)

    def forward(self, x):
        h = self.fc(x)
        h.view(-1, 2, WIDTH)[:, 0].mul_(1.5)  # in place, through a view
        if self.graph_break:
            h = h / (1 + h.abs().max().item())
        h = self.ln(self.norm(h))
        out = torch.softmax(self.head(h), dim=-1)
        noise = nn.functional.dropout(h, p=0.25, training=True)  # random: no truth of its own
        return out, noise * 2


def make(graph_break: bool = False) -> tuple[Model, torch.Tensor]:
    torch.manual_seed(0)
    model = Model(graph_break).eval()
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
    return model, x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph-break", action="store_true")
    parser.add_argument("--calls", type=int, default=1)
    args = parser.parse_args()
    model, x = make(args.graph_break)
    compiled = torch.compile(model)
    with torch.no_grad():
        for _ in range(args.calls):
            out, _noise = compiled(x)
    print("out[0, :4]:", out[0, :4].float().tolist())


if __name__ == "__main__":
    main()
