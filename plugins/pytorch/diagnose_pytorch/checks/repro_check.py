"""A standalone repro written by diagnose's subgraph isolation: the subgraph(s) of a model's graph
that a backend computes wrongly ("pieces"), rebuilt as Python code from the FX graph the backend
was given, with the real inputs they had in the run (the .npy files beside this script).

    python repro.py                  # with the run's backend: exits 1 when it fails, 0 when it passes
    python repro.py --backend eager  # another backend: a builtin name, module:function, torchair

Each piece runs eagerly, in float64 and compiled with the backend (torch.compile, fullgraph);
each output of the backend is judged against eager's by PyTorch's own accuracy rule
(torch._dynamo.utils.same: allclose within the dtype's tolerance, or else an RMSE against the
float64 result within a small multiple of eager's own). Needs only torch, numpy and the
backend's module."""

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from pathlib import Path

import numpy as np
import torch

# repro_writer copies this file into a standalone repro.py, which cannot import the package:
# the torch internals it needs are imported here directly (all stable over 2.5.1-2.14, compat.py).
import torch._dynamo.config
import torch._inductor.config
from torch._dynamo.utils import same
from torch.utils import _pytree as pytree

HERE = Path(__file__).resolve().parent
LOW_PRECISION = (torch.float16, torch.bfloat16)
LOW_PRECISION_TOLERANCE = 1e-2


def tolerance(dtype: torch.dtype) -> float:
    return LOW_PRECISION_TOLERANCE if dtype in LOW_PRECISION else torch._dynamo.config.repro_tolerance


def load_tensor(spec: dict) -> torch.Tensor:
    array = np.load(HERE / spec["file"], allow_pickle=False)
    tensor = torch.from_numpy(np.ascontiguousarray(array)).to(getattr(torch, spec["dtype"]))
    laid_out = torch.empty_strided(tensor.shape, spec["stride"], dtype=tensor.dtype, device=spec["device"])
    try:
        laid_out.copy_(tensor)
    except RuntimeError:  # overlapping strides (an expanded tensor): the values, contiguous
        laid_out = tensor.to(spec["device"])
    return laid_out.requires_grad_(spec["requires_grad"])


def load_value(spec: dict):
    return load_tensor(spec) if "file" in spec else spec["value"]


def set_attribute(module: torch.nn.Module, dotted: str, value: torch.Tensor) -> None:
    *parents, name = dotted.split(".")
    for part in parents:
        if not hasattr(module, part):
            module.add_module(part, torch.nn.Module())
        module = getattr(module, part)
    module.register_buffer(name, value)


def in_float64(value):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().to(torch.float64)
    return value


def torchair_backend(options: dict):
    # on NPU hosts only
    import torchair
    from torchair.configs.compiler_config import CompilerConfig

    config = CompilerConfig()
    if options["fusion_switch_file"]:
        config.fusion_config.fusion_switch_file = options["fusion_switch_file"]
    for dotted, value in options["fields"].items():
        *parents, name = dotted.split(".")
        target = config
        for part in parents:
            target = getattr(target, part)
        setattr(target, name, value)
    return torchair.get_npu_backend(compiler_config=config)


def backend_named(name: str, recorded: dict):
    if name == "torchair":
        return torchair_backend(recorded["torchair"])
    if ":" in name:
        module, _, function = name.partition(":")
        try:
            return getattr(importlib.import_module(module), function)
        except SystemExit as e:  # a script with its program at top level, not a module
            sys.exit(
                f"importing {module}, the backend's module, exited (status {e.code}): it runs a program when "
                "imported (no `if __name__ == '__main__':` guard). Move the backend into a module of its own, "
                "or pass --backend."
            )
    return name


@contextlib.contextmanager
def as_in_the_run(piece: dict, recorded: dict, backend_name: str | None = None):
    """The run's grad mode and autocast, and for Inductor its config overrides."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.set_grad_enabled(piece["grad"]))
        if recorded["autocast"]:
            device = piece["inputs"][0]["device"] if piece["inputs"] else "cpu"
            stack.enter_context(torch.autocast(torch.device(device).type, dtype=getattr(torch, recorded["autocast"])))
        if backend_name == "inductor" and recorded["inductor_config"]:
            stack.enter_context(torch._inductor.config.patch(recorded["inductor_config"]))
        yield


def run_eager(module_class, piece: dict, recorded: dict):
    with as_in_the_run(piece, recorded):
        return module_class()(*[load_value(s) for s in piece["inputs"]])


def run_float64(module_class, piece: dict):
    try:
        with torch.no_grad():
            return module_class().to(torch.float64)(*[in_float64(load_value(s)) for s in piece["inputs"]])
    except Exception as e:  # noqa: BLE001 — without a float64 result, eager is its own reference
        print(f"  (no float64 result: {type(e).__name__}: {e})")
        return None


def run_backend(module_class, piece: dict, recorded: dict, backend_name: str):
    compiled = torch.compile(
        module_class(), backend=backend_named(backend_name, recorded), fullgraph=True, dynamic=False
    )
    with as_in_the_run(piece, recorded, backend_name):
        return compiled(*[load_value(s) for s in piece["inputs"]])


def max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest |a - b| where they differ (equal infinities and NaN against NaN do not)."""
    if a.shape != b.shape or not a.numel():
        return float("nan") if a.shape != b.shape else 0.0
    a, b = a.detach().to(torch.float64), b.detach().to(torch.float64)
    alike = (a == b) | (a.isnan() & b.isnan())
    return torch.where(alike, 0.0, (a - b).abs()).max().item()


def judge(ref, res, fp64) -> bool:
    """Prints each output's verdict; True when every output passes."""
    refs, results = pytree.tree_leaves(ref), pytree.tree_leaves(res)
    truths = pytree.tree_leaves(fp64) if fp64 is not None else [None] * len(refs)
    if len(refs) != len(results):
        print(f"  {len(results)} outputs from the backend, {len(refs)} from eager: FAILS")
        return False
    passed = True
    for index, (expected, actual, truth) in enumerate(zip(refs, results, truths)):
        if not isinstance(expected, torch.Tensor):
            ok = expected == actual
            print(f"  output {index}: {actual!r} (eager {expected!r}): {'passes' if ok else 'FAILS'}")
        else:
            ok = same(
                expected.detach(),
                actual.detach(),
                truth,
                tol=tolerance(expected.dtype),
                equal_nan=True,
                log_error=lambda *args: None,
            )
            line = f"  output {index}: {str(expected.dtype).removeprefix('torch.')} {list(expected.shape)}"
            line += f" max abs error vs eager {max_abs(expected, actual):.3e}"
            if isinstance(truth, torch.Tensor):
                line += f" (vs float64: eager {max_abs(truth, expected):.3e}, backend {max_abs(truth, actual):.3e})"
            print(f"{line}: {'passes' if ok else 'FAILS'}")
        passed = passed and ok
    return passed


def check(module_class, piece: dict, recorded: dict, backend_name: str) -> bool:
    print(f"piece of graph {piece['graph']} ({', '.join(piece['nodes'])}) with backend {backend_name}:")
    ref = run_eager(module_class, piece, recorded)
    fp64 = run_float64(module_class, piece)
    try:
        res = run_backend(module_class, piece, recorded, backend_name)
    except Exception:  # noqa: BLE001 — a backend that raises fails the check
        traceback.print_exc()
        print("  the backend raised: FAILS")
        return False
    return judge(ref, res, fp64)


def main(pieces: list, recorded: dict, argv=None) -> int:
    parser = argparse.ArgumentParser(description="Replays the subgraph(s) diagnose isolated.")
    parser.add_argument("--backend", default=recorded["backend"], help=f"default: {recorded['backend']}")
    options = parser.parse_args(argv)
    sys.path[:0] = recorded["paths"]
    os.environ.update(recorded["env"])
    passed = all([check(module_class, piece, recorded, options.backend) for module_class, piece in pieces])
    print(f"{'PASS' if passed else 'FAIL'}: backend {options.backend} {'matches' if passed else 'differs from'} eager")
    return 0 if passed else 1
