"""pytorch/pytorch#185337: Inductor CPU drops an explicit float32 -> float16 -> float32 round trip
before a reduction: the sums come out as if the values were never rounded to float16."""

import torch


def rounded_sums(x):
    y = x.to(torch.float16).to(torch.float32)
    return y.sum(dim=1)


x = torch.arange(20, dtype=torch.float32).reshape(5, 4).t() / 7.0
print(torch.compile(rounded_sums)(x))
