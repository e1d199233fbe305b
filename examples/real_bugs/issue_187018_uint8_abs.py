"""pytorch/pytorch#187018: abs of uint8 promoted to int by std::abs in Inductor CPU's kernel, when
the value flows through cat and sum: -800 where eager gives 224 (uint8 wraps)."""

import torch


def total(x):
    y = -x.abs()
    return torch.cat([y, y]).sum()


x = torch.tensor([200, 200], dtype=torch.uint8)
print(torch.compile(total)(x))
