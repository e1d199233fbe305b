"""Greedy decoding with generate() through a user backend built on Inductor (decode_backend.py):
a tiny Qwen2ForCausalLM from a small config with random seeded weights (nothing is downloaded),
batch 1, the default dynamic KV cache, `model.forward = torch.compile(model.forward,
backend=decode_backend.backend, dynamic=True)`: a prefill call (the prompt) and one call per
new token, the decode calls sharing one graph with a one-token query.

    python examples/user_backend_decode/model.py [--new-tokens N] [--out OUT.pt]
"""

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: never reach the hub
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

import decode_backend  # noqa: E402

VOCAB = 256


def build() -> torch.nn.Module:
    config = transformers.Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        attn_implementation="sdpa",
    )
    return transformers.Qwen2ForCausalLM(config).eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--new-tokens", type=int, default=4)
    parser.add_argument("--out", help="save the generated tokens (torch.save) here")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build()
    model.forward = torch.compile(model.forward, backend=decode_backend.backend, dynamic=True)
    prompt = torch.randint(0, VOCAB, (1, 8), generator=torch.Generator().manual_seed(100))
    with torch.no_grad():
        tokens = model.generate(prompt, max_new_tokens=args.new_tokens, do_sample=False, pad_token_id=0)
    print("generated:", tokens[0, prompt.shape[1] :].tolist())
    if args.out:
        torch.save(tokens, args.out)


if __name__ == "__main__":
    main()
