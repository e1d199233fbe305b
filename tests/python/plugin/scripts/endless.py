"""Calls a compiled MLP step after step until killed (for the SIGKILL test)."""

import itertools

import torch

from sibling_mlp import MLP  # a module next to the script: the runner puts its directory first

if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.compile(MLP().eval())
    with torch.no_grad():
        for _step in itertools.count():
            model(torch.randn(8, 32))
