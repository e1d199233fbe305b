"""A tiny Hugging Face causal language model, built offline from a small config with random
seeded weights (nothing is downloaded), compiled with torch.compile as a user would write it.

    python examples/hf_causal_lm/model.py [--arch llama|gpt2] [--dtype float32|bfloat16]
                                          [--graph-break] [--two-lengths] [--use-cache]
                                          [--generate N] [--out OUT.pt]

`--arch llama`: LlamaForCausalLM (hidden 64, intermediate 128, 2 layers, 4 heads, 2 KV heads,
vocab 256): RMSNorm, rotary embeddings, grouped-query attention, SwiGLU. `--arch gpt2`:
GPT2LMHeadModel (n_embd 64, 2 layers, 4 heads, vocab 256, n_positions 64): LayerNorm, GELU
(tanh), learned positions. Both in eval mode, `use_cache=False`, attention through
`scaled_dot_product_attention` ("sdpa", the default of transformers; see README.md).
Input ids: batch 2 x 16 tokens from a seeded generator. `--graph-break` puts a
`.item()` (a Dynamo graph break) into the forward of the second decoder layer; `--two-lengths`
calls the compiled model a second time with 12 tokens (Dynamo compiles again, with a dynamic
sequence length). `--use-cache` calls it with `use_cache=True`: it also returns the KV cache (a
DynamicCache), whose key and value tensors are final outputs too. `--generate N` decodes N new
tokens greedily from an 8-token prompt, batch 1, with a static cache and the forward compiled
(`model.forward = torch.compile(model.forward)`): a prefill call, then one call per token,
each writing the cache in place. Under diagnose the model's
dtype is the run spec's (the workflow's `model: dtype:`); alone, `--dtype`.
"""

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: never reach the hub
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

VOCAB = 256
BATCH = 2
LENGTHS = (16, 12)


# Each architecture's tiny config and model class; the keys every config shares are set in build.
ARCHITECTURES = {
    "llama": (
        transformers.LlamaConfig,
        transformers.LlamaForCausalLM,
        dict(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
        ),
    ),
    "gpt2": (
        transformers.GPT2Config,
        transformers.GPT2LMHeadModel,
        dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1),
    ),
}


def build(arch: str, attn_implementation: str = "sdpa") -> torch.nn.Module:
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown arch {arch!r}")
    config_class, model_class, sizes = ARCHITECTURES[arch]
    config = config_class(vocab_size=VOCAB, use_cache=False, attn_implementation=attn_implementation, **sizes)
    return model_class(config).eval()


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    return model.model.layers if hasattr(model, "model") else model.transformer.h


def insert_graph_break(layer: torch.nn.Module) -> None:
    """The layer's forward reads one value of its input as a Python number (`.item()`), which
    Dynamo cannot keep in the graph: the graph ends before the layer and a new one starts."""
    forward = layer.forward

    def forward_with_item(hidden_states, *args, **kwargs):
        hidden_states.reshape(-1)[0].item()  # read and dropped: the numbers are unchanged
        return forward(hidden_states, *args, **kwargs)

    layer.forward = forward_with_item


def input_ids(length: int, seed: int) -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, length), generator=torch.Generator().manual_seed(seed))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", choices=("llama", "gpt2"), default="llama")
    parser.add_argument(
        "--dtype",
        choices=("float32", "bfloat16", "float64"),
        default="float32",
        help="run alone in this dtype (under diagnose the run spec's dtype wins)",
    )
    parser.add_argument("--graph-break", action="store_true", help="a .item() inside the second decoder layer")
    parser.add_argument("--two-lengths", action="store_true", help="a second call with 12 tokens")
    parser.add_argument("--use-cache", action="store_true", help="return the KV cache too")
    parser.add_argument(
        "--generate", type=int, metavar="N", help="greedy decoding of N new tokens, batch 1, static cache"
    )
    parser.add_argument("--out", help="save the logits (torch.save) here")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = build(args.arch).to(getattr(torch, args.dtype))
    if args.generate:
        return generate(model, args.generate, args.out)
    if args.graph_break:
        insert_graph_break(decoder_layers(model)[1])
    compiled = torch.compile(model)
    lengths = LENGTHS if args.two_lengths else LENGTHS[:1]
    logits = []
    with torch.no_grad():
        for call, length in enumerate(lengths):
            out = compiled(input_ids=input_ids(length, seed=100 + call), use_cache=args.use_cache)
            logits.append(out.logits)
    for tensor in logits:
        print(f"{args.arch} logits {list(tensor.shape)} [0, -1, :4]:", tensor[0, -1, :4].float().tolist())
    if args.out:
        torch.save(logits, args.out)


def generate(model: torch.nn.Module, new_tokens: int, out: str | None) -> None:
    """The documented recipe for compiled decoding: the forward compiled, generate() with a
    static KV cache, greedy, batch 1. Each token is one call of the compiled forward: the prefill
    of the prompt, then one decode call per new token, reading and writing the cache in place."""
    model.forward = torch.compile(model.forward)
    prompt = input_ids(8, seed=100)[:1]
    with torch.no_grad():
        tokens = model.generate(
            prompt,
            max_new_tokens=new_tokens,
            do_sample=False,
            use_cache=True,
            cache_implementation="static",
            pad_token_id=0,
        )
    print("generated:", tokens[0, prompt.shape[1] :].tolist())
    if out:
        torch.save(tokens, out)


if __name__ == "__main__":
    main()
