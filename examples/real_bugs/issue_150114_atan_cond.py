"""pytorch/pytorch#150114: the condition number of a singular matrix (arctan of all ones): eager
returns 37269600, Inductor inf, as float64 does."""

import torch


def condition(x):
    return torch.linalg.cond(torch.arctan(x))


print(torch.compile(condition)(torch.ones(2, 2)))
