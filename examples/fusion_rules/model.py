"""A small block written out op by op, so that every fusion rule of fusion_backend.py finds its
pattern: two matmul+bias (MatMulBiasAddFusionPass), an erf GELU (GeluFusionPass), x*sigmoid(x)
(TbeEltwiseFusionPass), a hand-written LayerNorm (LayerNormFusionPass) and softmax
(SoftmaxFusionPass). Compiled with the fusion backend unless told otherwise.

    python examples/fusion_rules/model.py [--out OUT.pt] [--steps N] [--backend fusion|inductor]
"""

import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/: example_loop.py, mock_ge.py
import example_loop  # noqa: E402
import fusion_backend  # noqa: E402
import mock_ge  # noqa: E402


class BiasMatMul(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out) / math.sqrt(d_in))
        self.bias = nn.Parameter(torch.randn(d_out) * 0.1)

    def forward(self, x):
        return x @ self.weight + self.bias


class Block(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = BiasMatMul(dim, hidden)
        self.down = BiasMatMul(hidden, dim)
        self.norm = mock_ge.ManualLayerNorm(dim)

    def forward(self, x):
        h = mock_ge.erf_gelu(self.up(x))
        y = self.norm(fusion_backend.sigmoid_mul(self.down(h)))
        attention = mock_ge.manual_softmax(y @ y.transpose(0, 1) / math.sqrt(y.shape[-1]))
        return attention @ y + x


if __name__ == "__main__":
    args = example_loop.parser(backends=("fusion", "inductor")).parse_args()
    torch.manual_seed(0)
    compiled = torch.compile(Block().eval(), backend=fusion_backend.backend if args.backend == "fusion" else "inductor")
    example_loop.run("fusion_rules", compiled, (8, 16), args)
