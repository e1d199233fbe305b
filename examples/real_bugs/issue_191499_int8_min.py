"""pytorch/pytorch#191499: Inductor CPU's vectorised min/argmin reduction of 16 or more int8/uint8
values returns 0 (argmin -1) where eager returns the smallest value."""

import torch


def smallest(x):
    return torch.min(x), torch.argmin(x)


x = torch.tensor([5, 1, 100, 3, 7, 8, 9, 13, 100, 120, 127, 2, 6, 4, 11, 12, 90, 80], dtype=torch.uint8)
print(torch.compile(smallest)(x))
