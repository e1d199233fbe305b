"""A model whose forward raises halfway: the run must report the error with its traceback."""

import torch


class Broken(torch.nn.Module):
    def forward(self, x):
        _doubled = x * 2  # an op before the failure
        raise RuntimeError("planted failure in forward")


if __name__ == "__main__":
    torch.compile(Broken())(torch.ones(3))
