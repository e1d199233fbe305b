"""pytorch/pytorch#145466: floor(cos(x)) in float16 differs under torch.compile: Inductor keeps
cos in float32 inside the fused kernel, eager rounds it to float16 first (0.99996 -> 1.0), so
floor gives 1 in eager where float64 gives 0."""

import torch


def floor_cos(x):
    return torch.floor(torch.cos(x))


x = torch.randn(32, 32, generator=torch.Generator().manual_seed(0)).to(torch.float16)
print(torch.compile(floor_cos)(x).sum())
