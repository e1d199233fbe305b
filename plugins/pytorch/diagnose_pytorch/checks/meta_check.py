"""The per-op meta check (run spec `checks.meta`, eager mode): each op the model runs is also
run under FakeTensorMode on fake copies of its inputs (same shape, dtype and stride), and the
fake outputs are compared with the real ones: shape, dtype, and the significant strides where
the real output is dense and non-overlapping (the strides of dimensions of size 1, and all of an
empty tensor's, address no element: PyTorch's own check_significant_strides ignores them too).
The fake (meta) implementation is what torch.compile traces with, so a mismatch names an op
whose graph-mode shape/dtype inference is wrong.

A custom op (torch.library; a namespace other than aten/prim/prims) is also checked against its
schema (custom_op_schema.py, `torch.library.opcheck`'s `test_schema`). torch.compile trusts
the schema: an undeclared write is reordered or fused past (Inductor), so compiled and eager
differ. The fake check above is the shape/dtype/stride part of opcheck's `test_faketensor`; its
`test_autograd_registration` checks nothing without inputs that require grad, and its
`test_aot_dispatch_*` run the op through AOT Autograd, as dynamo_meta_check's aot_eager runs
do for the whole model.

Writes <output_dir>/meta_check.json: one entry per distinct op, the first failing call kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from .. import compat
from ..compat import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
    pytree,
)

# fake mode cannot compute these without the data: reported as skipped, not as failures
_NEEDS_DATA = (DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException)
_FAILED = ("mismatch", "error")


def _signature(op: str, args, kwargs) -> tuple:
    def describe(value):
        if isinstance(value, torch.Tensor):
            return ("T", value.dtype, tuple(value.shape), tuple(value.stride()), value.device.type)
        return repr(value)

    return (op, tuple(describe(v) for v in pytree.tree_leaves((args, kwargs))))


def compare_outputs(real, fake) -> list[dict]:
    real_leaves = [v for v in pytree.tree_leaves(real) if isinstance(v, torch.Tensor)]
    fake_leaves = [v for v in pytree.tree_leaves(fake) if isinstance(v, torch.Tensor)]
    if len(real_leaves) != len(fake_leaves):
        return [{"output": None, "field": "count", "eager": len(real_leaves), "fake": len(fake_leaves)}]
    mismatches = []
    for i, (r, f) in enumerate(zip(real_leaves, fake_leaves)):
        if list(r.shape) != list(f.shape):
            mismatches.append({"output": i, "field": "shape", "eager": list(r.shape), "fake": list(f.shape)})
        if r.dtype != f.dtype:
            mismatches.append({"output": i, "field": "dtype", "eager": str(r.dtype), "fake": str(f.dtype)})
        if (
            list(r.shape) == list(f.shape)
            and r.layout == torch.strided
            and compat.is_non_overlapping_and_dense(r)
            and not same_significant_strides(r, f)
        ):
            mismatches.append({"output": i, "field": "stride", "eager": list(r.stride()), "fake": list(f.stride())})
    return mismatches


def same_significant_strides(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal strides on every dimension that addresses more than one element; an empty tensor's
    strides address nothing. Both tensors have the same shape."""
    if a.numel() == 0:
        return True
    return all(n == 1 or sa == sb for n, sa, sb in zip(a.shape, a.stride(), b.stride()))


def _failed(entry: dict) -> bool:
    return entry["status"] in _FAILED or bool(entry.get("violations"))


class MetaChecker:
    def __init__(self, path: Path):
        self.path = path
        self.entries: dict[str, dict] = {}  # op -> entry, first-seen order
        self._seen: set = set()

    def wants(self, op: str, args, kwargs) -> bool:
        """Each op is checked once per input signature, and no more once it failed."""
        entry = self.entries.get(op)
        if entry is not None and _failed(entry):
            return False
        signature = _signature(op, args, kwargs)
        if signature in self._seen:
            return False
        self._seen.add(signature)
        return True

    def fake_run(self, func, args, kwargs):
        """Runs `func` on fake copies of the inputs; call before the real op (which may
        mutate its inputs). Returns ("ok", outputs) or (status, message)."""
        try:
            with FakeTensorMode(allow_non_fake_inputs=False) as mode:
                fake_args, fake_kwargs = pytree.tree_map_only(torch.Tensor, mode.from_tensor, (args, kwargs))
                return "ok", func(*fake_args, **fake_kwargs)
        except _NEEDS_DATA as e:
            return "skipped", f"fake mode needs the data: {type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 — any failure of the meta function is a finding
            return "error", f"{type(e).__name__}: {e}"

    def record(self, op: str, op_key: str, fake_result, real_out, schema_result: dict | None = None) -> None:
        """`schema_result`: schema_check of the same call (a custom op)."""
        status, value = fake_result
        entry = {"op": op, "op_key": op_key, "status": status, "mismatches": [], "message": "", **(schema_result or {})}
        if status == "ok":
            entry["mismatches"] = compare_outputs(real_out, value)
            if entry["mismatches"]:
                entry["status"] = "mismatch"
                entry["message"] = "; ".join(
                    f"output {m['output']} {m['field']}: eager {m['eager']}, fake {m['fake']}"
                    for m in entry["mismatches"]
                )
        else:
            entry["message"] = value
        old = self.entries.get(op)
        if (
            old is None
            or (_failed(entry) and not _failed(old))
            or (old["status"] == "skipped" and entry["status"] == "ok")
        ):
            self.entries[op] = entry

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"ops": list(self.entries.values())}, indent=1, default=str))
        os.replace(tmp, self.path)
