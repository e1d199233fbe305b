"""A small block written out op by op, so that every fusion rule of fusion_backend.py finds its
pattern: two matmul+bias (MatMulBiasAddFusionPass), an erf GELU (GeluFusionPass), x*sigmoid(x)
(TbeEltwiseFusionPass), a hand-written LayerNorm (LayerNormFusionPass) and softmax
(SoftmaxFusionPass). Compiled with the fusion backend unless told otherwise.

    python examples/fusion_rules/model.py [--out OUT.pt] [--steps N] [--backend fusion|inductor]
"""

import argparse
import math

import torch
from torch import nn

import fusion_backend


class BiasMatMul(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_in, d_out) / math.sqrt(d_in))
        self.bias = nn.Parameter(torch.randn(d_out) * 0.1)

    def forward(self, x):
        return x @ self.weight + self.bias


class Norm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.beta = nn.Parameter(0.1 * torch.randn(dim))

    def forward(self, x):
        return fusion_backend.manual_layer_norm(x, self.gamma, self.beta)


class Block(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.up = BiasMatMul(dim, hidden)
        self.down = BiasMatMul(hidden, dim)
        self.norm = Norm(dim)

    def forward(self, x):
        h = fusion_backend.erf_gelu(self.up(x))
        y = self.norm(fusion_backend.sigmoid_mul(self.down(h)))
        attention = fusion_backend.manual_softmax(y @ y.transpose(0, 1) / math.sqrt(y.shape[-1]))
        return attention @ y + x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    parser.add_argument("--backend", choices=("fusion", "inductor"), default="fusion")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = Block().eval()
    compiled = torch.compile(model, backend=fusion_backend.backend if args.backend == "fusion" else "inductor")
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(8, 16, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x))
    print("fusion_rules output[0, :4]:", outputs[0][0, :4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)


if __name__ == "__main__":
    main()
