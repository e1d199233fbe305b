"""One decoder layer decoding token by token, as an LLM serves batch 1: the key/value cache
lives in module buffers outside the graph and each compiled call writes one position of it in
place (`index_copy_`) and attends over the positions written so far. Run alone (`python
model.py [--out OUT.pt] [--steps N] [--backend dce|inductor]`) it compiles with
cache_write_backend.py, whose dead-code pass drops the graph's write into the cache (see
README.md)."""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import cache_write_backend  # noqa: E402
import example_loop  # noqa: E402


class DecoderLayer(nn.Module):
    def __init__(self, dim=32, heads=4, max_len=16):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_len, self.head_dim))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_len, self.head_dim))
        self.register_buffer("position", torch.zeros(1, dtype=torch.long))

    def forward(self, x):
        """x: (1, 1, dim), the newest token; returns its hidden state."""
        q, k, v = self.qkv(x).view(1, 1, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        self.k_cache.index_copy_(2, self.position, k)
        self.v_cache.index_copy_(2, self.position, v)
        written = torch.arange(self.k_cache.shape[2]) <= self.position
        scores = (q @ self.k_cache.transpose(-1, -2)) / self.head_dim**0.5
        scores = scores.masked_fill(~written, float("-inf"))
        attended = scores.softmax(-1) @ self.v_cache
        self.position.add_(1)
        return self.out(attended.transpose(1, 2).reshape(1, 1, -1)) + x


if __name__ == "__main__":
    args = example_loop.parser(backends=("dce", "inductor")).parse_args()
    torch.manual_seed(0)
    backend = cache_write_backend.backend if args.backend == "dce" else "inductor"
    compiled = torch.compile(DecoderLayer().eval(), backend=backend)
    example_loop.run("kv_cache_decode", compiled, (1, 1, 32), args)
