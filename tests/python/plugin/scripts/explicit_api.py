"""Uses the explicit API instead of the runner: start, wrap, step, finish."""

import sys

import torch

import diagnose_pytorch as dp

if __name__ == "__main__":
    dp.start()
    torch.manual_seed(0)
    model = dp.wrap(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh()))
    with torch.no_grad():
        for token in (0, 5, 7):
            with dp.step(token):
                model(torch.randn(2, 4))
    dp.finish()
    sys.exit(0)
