"""Qwen2-0.5B's public shape (qwen2_0_5b/config.json: hidden 896, intermediate 4864, 14 heads, 2 KV
heads, vocab 151936, tied embeddings, rope_theta 1e6) with random seeded weights (nothing is downloaded), in bfloat16,
compiled with torch.compile as a user would: one forward of 128 tokens, batch 1, no KV cache.

    python bench/qwen2_scale_model.py [--layers N] [--vocab V] [--tokens T] [--planted-layer L]
                                      [--planted-scale S] [--out OUT.pt]

`--planted-layer L` compiles with planted_defect_backend.py: Inductor whose post-grad custom pass
scales one op of layer L's MLP (a wrong kernel in compiled code only). Under diagnose the
model's dtype is the run spec's (the workflow's `model: dtype:`).
"""

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: never reach the hub
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import planted_defect_backend  # noqa: E402

# Qwen2-0.5B's sizes in the config.json form a checkpoint carries them in, read as a user's script reads it.
QWEN2_0_5B = json.loads((Path(__file__).resolve().parent / "qwen2_0_5b" / "config.json").read_text())


def build(layers: int, vocab: int) -> torch.nn.Module:
    sizes = {**QWEN2_0_5B, "num_hidden_layers": layers, "vocab_size": vocab}
    config = transformers.Qwen2Config(use_cache=False, attn_implementation="sdpa", **sizes)
    return transformers.Qwen2ForCausalLM(config).eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=QWEN2_0_5B["vocab_size"])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--planted-layer", type=int, help="the layer whose MLP the compiled code gets wrong")
    parser.add_argument(
        "--planted-scale",
        type=float,
        default=planted_defect_backend.SCALE,
        help="the factor the planted op is off by (small: a defect the final outputs absorb)",
    )
    parser.add_argument("--out", help="save the logits (torch.save) here")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = build(args.layers, args.vocab).to(torch.bfloat16)
    backend = "inductor"
    if args.planted_layer is not None:
        planted_defect_backend.LAYER = args.planted_layer
        planted_defect_backend.SCALE = args.planted_scale
        backend = planted_defect_backend.backend
    compiled = torch.compile(model, backend=backend)
    ids = torch.randint(0, args.vocab, (1, args.tokens), generator=torch.Generator().manual_seed(100))
    with torch.no_grad():
        logits = compiled(input_ids=ids).logits
    print(f"logits {list(logits.shape)} [0, -1, :4]:", logits[0, -1, :4].float().tolist())
    if args.out:
        torch.save(logits, args.out)


if __name__ == "__main__":
    main()
