"""Writes one dump in the diagnose dump format (docs/dump-format.md): manifest.jsonl plus
tensors/*.npy. Every record is appended and flushed right after its tensor file is
complete, so a process killed at any point leaves a readable partial dump."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import numpy as np
import torch
from torch._subclasses.fake_tensor import FakeTensor

from .stats import tensor_stats

FORMAT = "diagnose-dump"
VERSION = 1
PRODUCER = "diagnose-pytorch 0.1"

# Floating dtypes numpy lacks are widened to float32, which holds all their values exactly;
# the record's `dtype` keeps the real type.
_WIDENED = {
    getattr(torch, name)
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
    if hasattr(torch, name)
}


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A C-ordered host copy of `tensor` in the dtype the .npy file stores."""
    host = tensor.detach()
    if host.device.type != "cpu":
        host = host.cpu()
    host = host.contiguous()
    if host.dtype in _WIDENED:
        host = host.to(torch.float32)
    if host.is_conj():
        host = host.resolve_conj()
    if host.is_neg():
        host = host.resolve_neg()
    return host.numpy()


def dumpable(value) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and value.layout == torch.strided
        and not value.is_quantized
        and value.device.type != "meta"
        and not isinstance(value, FakeTensor)
    )


class DumpWriter:
    def __init__(
        self, directory: str | os.PathLike, header: dict, *, stats_only: bool = False, max_bytes: int | None = None
    ):
        self.directory = Path(directory)
        (self.directory / "tensors").mkdir(parents=True, exist_ok=True)
        self.stats_only = stats_only
        self.max_bytes = max_bytes
        self.written_bytes = 0
        self.records = 0
        self.budget_reached = False
        self._closed = False
        self._manifest = open(self.directory / "manifest.jsonl", "w", encoding="utf-8")
        created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._append(
            {"type": "header", "format": FORMAT, "version": VERSION, "producer": PRODUCER, **header, "created": created}
        )

    def write_tensor(
        self,
        tensor: torch.Tensor,
        record: dict,
        *,
        truth: torch.Tensor | None = None,
        precision: torch.dtype | None = None,
    ) -> None:
        """Appends a `tensor` record. `record` holds seq, op_key, io, index and the optional
        fields; dtype, shape, stride, stats and file are filled in here. With `truth` (the
        tensor's float64 shadow) the record also gets `truth_file`, written beside `file`
        and counted in the same budget (both or neither); `precision` is the lowest floating
        precision the value was computed from."""
        array = to_numpy(tensor)
        data = array.tobytes()
        full = {
            "type": "tensor",
            **record,
            "dtype": str(tensor.dtype),
            "shape": list(tensor.shape),
            "stride": list(tensor.stride()),
            "stats": tensor_stats(tensor, data),
        }
        if precision is not None:
            full["precision"] = str(precision)
        truth_array = None
        if truth is not None and not (self.stats_only or self.budget_reached):
            truth_array = to_numpy(truth)
        size = len(data) + (truth_array.nbytes if truth_array is not None else 0)
        if self._may_write(size):
            name = _file_name(record)
            with open(self.directory / "tensors" / name, "wb") as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
            full["file"] = f"tensors/{name}"
            if truth_array is not None:
                truth_name = name[: -len(".npy")] + ".truth.npy"
                with open(self.directory / "tensors" / truth_name, "wb") as f:
                    np.lib.format.write_array(f, truth_array, allow_pickle=False)
                full["truth_file"] = f"tensors/{truth_name}"
            self.written_bytes += size
        self._append(full)
        self.records += 1

    def close(self) -> None:
        if self._closed:
            return
        self._append({"type": "end", "records": self.records})
        self._manifest.close()
        self._closed = True

    def _may_write(self, size: int) -> bool:
        if self.stats_only or self.budget_reached:
            return False
        if self.max_bytes is not None and self.written_bytes + size > self.max_bytes:
            self.budget_reached = True
            self._append({"type": "budget", "limit_bytes": self.max_bytes, "written_bytes": self.written_bytes})
            return False
        return True

    def _append(self, record: dict) -> None:
        self._manifest.write(json.dumps(record, allow_nan=False) + "\n")
        self._manifest.flush()


def _file_name(record: dict) -> str:
    item = f".{record['item']}" if record.get("item") is not None else ""
    return f"{record['seq']:07d}.{record['io']}.{record['index']}{item}.npy"
