"""TorchAir's reduce-overhead / npugraph_ex (aclgraph) data dump, `data_dump_stage="original"`:
one `{node}[_device_{i}]_{k}.pt` per tensor of each FX node, written by `torch.save` directly in
`{dump_path}/worldsize{W}_global_rank{R}`. Converted to a directory of `.npy` files of the same
names, which `diagnose compare` reads (two such directories pair by file name). Each file is
loaded with `torch.load(weights_only=True)`: tensors only, nothing of the file is executed;
anything else is refused and listed."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch


def to_npy(source: str, out: str) -> tuple[list[Path], list[str]]:
    """Writes OUT/{name}.npy for every {name}.pt of SOURCE (bfloat16 as float32, as TorchAir's
    FX dump saves it); returns the files written and one line per file refused."""
    written, refused = [], []
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(Path(source).glob("*.pt")):
        try:
            value = torch.load(path, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, OSError, EOFError, ValueError) as e:
            refused.append(f"{path.name}: not loadable as tensors only ({str(e).splitlines()[0]})")
            continue
        if not isinstance(value, torch.Tensor):
            refused.append(f"{path.name}: holds a {type(value).__name__}, not a tensor")
            continue
        value = value.detach()
        if value.dtype == torch.bfloat16:
            value = value.float()
        array = value.numpy()
        np.save(target / f"{path.stem}.npy", array)
        written.append(target / f"{path.stem}.npy")
    return written, refused
