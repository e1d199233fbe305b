"""A small float32 attention block written out op by op, so that every fusion rule of
precision_backend.py finds its pattern: a hand-written LayerNorm (LayerNormFusionPass) before
the attention and before the MLP, six matmul+bias (MatMulBiasAddFusionPass: q, k, v, the
output projection and the MLP's two), a hand-written softmax (SoftmaxFusionPass), an erf GELU
(GeluFusionPass) and two residual adds (TbeEltwiseAddFusionPass). Compiled with the fusion
backend unless told otherwise.

    python examples/precision_loss/model.py [--out OUT.pt] [--steps N] [--backend fusion|inductor]
"""

import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/: example_loop.py, mock_ge.py
import example_loop  # noqa: E402
import mock_ge  # noqa: E402
import precision_backend  # noqa: E402


class BiasMatMul(nn.Module):
    def __init__(self, d_in, d_out, scale=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out) * (scale / math.sqrt(d_in)))
        self.bias = nn.Parameter(torch.randn(d_out) * (0.1 * scale))

    def forward(self, x):
        return x @ self.weight + self.bias


class Block(nn.Module):
    """One single-head pre-norm transformer block over a sequence of `dim`-wide tokens; the
    projections back into the residual stream start small (scaled by 0.3, as GPT-2 scales them)."""

    def __init__(self, dim=64, hidden=128):
        super().__init__()
        self.attn_norm = mock_ge.ManualLayerNorm(dim)
        self.q, self.k, self.v = (BiasMatMul(dim, dim) for _ in range(3))
        self.o = BiasMatMul(dim, dim, scale=0.3)
        self.mlp_norm = mock_ge.ManualLayerNorm(dim)
        self.up = BiasMatMul(dim, hidden)
        self.down = BiasMatMul(hidden, dim, scale=0.3)

    def forward(self, x):
        h = self.attn_norm(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        scores = q @ k.transpose(0, 1) / math.sqrt(q.shape[-1])
        x = x + self.o(mock_ge.manual_softmax(scores) @ v)
        return x + self.down(mock_ge.erf_gelu(self.up(self.mlp_norm(x))))


if __name__ == "__main__":
    args = example_loop.parser(backends=("fusion", "inductor")).parse_args()
    torch.manual_seed(0)
    model = Block().eval()
    compiled = torch.compile(model, backend=precision_backend.backend if args.backend == "fusion" else "inductor")
    example_loop.run("precision_loss", compiled, (64, 64), args)
