"""Asks torch.compile for Inductor explicitly, with options, once as a decorator and once
through nn.Module.compile(): the runner must still use the spec's backend."""

import torch


@torch.compile(backend="inductor", mode="max-autotune", fullgraph=True)
def scale(x):
    return torch.relu(x) * 3


class Net(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) + 1


if __name__ == "__main__":
    net = Net()
    net.compile(backend="inductor", options={"max_autotune": True})
    x = torch.linspace(-2, 2, 8)
    print(scale(x).sum().item(), net(x).sum().item())
