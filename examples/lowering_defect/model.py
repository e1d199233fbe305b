"""A scoring head with a custom softplus operator, compiled with torch.compile, as a user would
write it. The operator's eager (CPU) kernel is right; the decomposition registered for Inductor
is the textbook log(1 + exp(x)), which overflows to inf for x > 88 and returns 0 for x < -17
(see README.md).

    python examples/lowering_defect/model.py [--out OUT.pt] [--steps N]
"""

import argparse

import torch
from torch import nn
from torch._inductor.decomposition import register_decomposition


@torch.library.custom_op("diagnose_example::softplus", mutates_args=())
def softplus(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(x)


@softplus.register_fake
def _(x):
    return torch.empty_like(x)


@register_decomposition(torch.ops.diagnose_example.softplus.default)
def softplus_naive(x):
    return torch.log(1 + torch.exp(x))


class ScoringHead(nn.Module):
    def __init__(self, dim=16, classes=8, temperature=0.005):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, classes)
        self.temperature = temperature

    def forward(self, x):
        logits = self.score(torch.tanh(self.proj(x))) / self.temperature
        return softplus(logits).mean(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = ScoringHead().eval()
    compiled = torch.compile(model)
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("lowering_defect output:", outputs[0].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
