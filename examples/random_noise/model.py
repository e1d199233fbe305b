"""A model in eval mode that still draws random numbers: noise added by torch.randn_like
(examples/random_noise/README.md). Inductor generates its own random numbers; eager's come from
torch's generator, so graph and eager differ until Inductor is told to use eager's.

python examples/random_noise/model.py [--out OUT.pt] [--steps N] [--eager-rng]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


class NoisyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h + 0.5 * torch.randn_like(h)  # planted: noise injection kept at inference
        return torch.log_softmax(self.fc2(h), dim=-1)


if __name__ == "__main__":
    parser = example_loop.parser()
    parser.add_argument(
        "--eager-rng", action="store_true", help="graph mode draws eager's random numbers (Inductor's fallback_random)"
    )
    args = parser.parse_args()
    if args.eager_rng:
        import torch._inductor.config

        torch._inductor.config.fallback_random = True
    torch.manual_seed(0)
    model = NoisyMLP().eval()
    example_loop.run("random_noise", torch.compile(model), (8, 32), args)
