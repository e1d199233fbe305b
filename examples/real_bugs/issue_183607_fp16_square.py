"""pytorch/pytorch#183607: a value cast to float16 and squared overflows to Inf in eager (5000^2 >
65504); Inductor multiplies in float32 and returns 25000000."""

import torch


def square_in_half(x):
    y = x.to(torch.float16)
    return (y * y).to(torch.float32)


x = torch.tensor([5000.0, 2.0, 300.0, 0.5])
print(torch.compile(square_in_half)(x))
