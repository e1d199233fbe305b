"""A tiny attention layer for the single-op check of seeded ops (test_single_op_seeded.py):
F.scaled_dot_product_attention in eval mode (dropout 0: the CPU flash kernel, tagged
nondeterministic_seeded, uses no randomness), then a dropout with p=0.5 in training mode
(really random)."""

import torch
import torch.nn.functional as F
from torch import nn

HEADS, WIDTH = 2, 16


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)

    def forward(self, x):
        batch, tokens, _ = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.dropout(attended.transpose(1, 2).reshape(batch, tokens, WIDTH), p=0.5, training=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.compile(Attention().eval())
    with torch.no_grad():
        print(model(torch.randn(2, 8, WIDTH)).sum().item())
