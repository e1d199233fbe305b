"""A Llama-style decoder layer in bfloat16, written in plain PyTorch the way Hugging Face's
modeling_llama.py writes it: RMSNorm that upcasts to float32 and casts back, rotary embeddings
whose float32 cos/sin tables are computed in forward and cast to the model's dtype, attention
with a float32 softmax, a gated SiLU MLP, and a final LayerNorm. Nothing is wrong in it (see
README.md). Compiled with torch.compile (Inductor), as a user would.

    python examples/bf16_transformer/model.py [--out OUT.pt] [--steps N] [--dtype bfloat16]
"""

import sys
from pathlib import Path

import torch
from torch import nn

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where example_loop.py is
import example_loop  # noqa: E402


class RMSNorm(nn.Module):
    """LlamaRMSNorm: the statistics in float32 whatever the model's dtype."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class RotaryEmbedding(nn.Module):
    """LlamaRotaryEmbedding, its inverse frequencies computed in forward (float32)."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        self.head_dim = head_dim
        self.base = base

    def forward(self, x, position_ids):
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.int64, device=x.device).float() / self.head_dim
        inv_freq = 1.0 / (self.base**exponents)
        inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, hidden_states, cos, sin, mask):
        batch, seq, dim = hidden_states.shape
        shape = (batch, seq, self.heads, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        weights = torch.matmul(q, k.transpose(2, 3)) * self.scaling + mask
        weights = nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(batch, seq, dim)
        return self.o_proj(out)


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """One pre-norm decoder layer and a final LayerNorm, on hidden states (batch, seq, dim)."""

    def __init__(self, dim=64, heads=4, hidden=128):
        super().__init__()
        self.input_layernorm = RMSNorm(dim)
        self.rotary_emb = RotaryEmbedding(dim // heads)
        self.self_attn = Attention(dim, heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = MLP(dim, hidden)
        self.norm = nn.LayerNorm(dim)

    def forward(self, hidden_states):
        batch, seq, _ = hidden_states.shape
        position_ids = torch.arange(seq, device=hidden_states.device).unsqueeze(0).expand(batch, -1)
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        min_value = torch.finfo(hidden_states.dtype).min
        mask = torch.full((seq, seq), min_value, dtype=hidden_states.dtype, device=hidden_states.device)
        mask = torch.triu(mask, diagonal=1)
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), cos, sin, mask) + residual
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states)) + hidden_states
        return self.norm(hidden_states)


if __name__ == "__main__":
    args = example_loop.parser(dtype="bfloat16").parse_args()
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    compiled = torch.compile(DecoderLayer().eval().to(dtype))
    example_loop.run("bf16_transformer", compiled, (2, 16, 64), args, dtype)
