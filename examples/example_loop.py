"""The main loop every examples/*/model.py shares, so that a script shows only its model and
its torch.compile call: the command line (--out, --steps, and --backend or --dtype where the
example has them), one forward call a step without grad on an input seeded 100 + step, the
first output's leading values printed, and the outputs saved with torch.save under --out.

A model.py finds this file by putting examples/ on sys.path, in its run under diagnose as when
run alone (the plugin puts only the script's own directory there).
"""

import argparse

import torch

DTYPES = ("float32", "bfloat16", "float64")


def parser(backends: tuple[str, ...] = (), dtype: str | None = None) -> argparse.ArgumentParser:
    """--out and --steps; --backend among `backends` (the first is the default) and --dtype
    (default `dtype`) when given."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="save the outputs (torch.save) here")
    parser.add_argument("--steps", type=int, default=1, help="forward calls, one batch each")
    if backends:
        parser.add_argument("--backend", choices=backends, default=backends[0])
    if dtype:
        parser.add_argument(
            "--dtype",
            choices=(dtype, *(d for d in DTYPES if d != dtype)),
            default=dtype,
            help="run alone in this dtype (under diagnose the run spec's dtype wins)",
        )
    return parser


def run(name: str, compiled, input_shape: tuple[int, ...], args=None, dtype: torch.dtype | None = None) -> None:
    """Calls `compiled` once a step on a random input of `input_shape` (in `dtype` when given),
    prints the first output's leading values and saves the outputs under --out."""
    args = args if args is not None else parser().parse_args()
    outputs = []
    with torch.no_grad():
        for step in range(args.steps):
            x = torch.randn(*input_shape, generator=torch.Generator().manual_seed(100 + step))
            outputs.append(compiled(x if dtype is None else x.to(dtype)))
    first = outputs[0]
    index = ["0"] * (first.dim() - 1) + [":4"]
    print(f"{name} output[{', '.join(index)}]:", first[(0,) * (first.dim() - 1)][:4].float().tolist())
    if args.out:
        torch.save(outputs, args.out)
