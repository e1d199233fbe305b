"""A tiny model compiled with dynamic=True whose float attribute (as a rotary embedding's
`attention_scaling`) Dynamo makes a graph input read with `.item()`: the scalar is read at the
start of the graph and used again at its end, so a split in between puts its readers in two
pieces. Two batch sizes: one graph serves both."""

import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scaling = 0.5
        self.fc = torch.nn.Linear(4, 8)

    def forward(self, x):
        h = x.cos() * self.scaling
        y = torch.relu(self.fc(h))
        return y * self.scaling + h.sum(-1, keepdim=True)


def main():
    torch.manual_seed(0)
    compiled = torch.compile(Scaled(), dynamic=True)
    with torch.no_grad():
        for batch in (2, 3):
            print(compiled(torch.randn(batch, 4)))


if __name__ == "__main__":
    main()
