"""A 4-layer LlamaForCausalLM sized to measure dump volume: hidden 512, intermediate
1376, 8 heads, 4 KV heads, vocab 2000, 40M parameters (160 MB in float32), random seeded weights
(nothing is downloaded), compiled with torch.compile and called once on input ids of batch
2 x 128 tokens from a seeded generator.

    python examples/hf_causal_lm/llama4.py
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: never reach the hub
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

VOCAB = 2000
BATCH, LENGTH = 2, 128


def main():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=LENGTH,
        use_cache=False,
        attn_implementation="sdpa",
    )
    model = transformers.LlamaForCausalLM(config).eval()
    compiled = torch.compile(model)
    ids = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=torch.Generator().manual_seed(100))
    with torch.no_grad():
        logits = compiled(input_ids=ids).logits
    print("llama4 logits", list(logits.shape), "[0, -1, :4]:", logits[0, -1, :4].tolist())


if __name__ == "__main__":
    main()
