"""Writes one dump in the diagnose dump format (docs/dump-format.md): manifest.jsonl plus
tensors/*.npy. Every record is appended and flushed right after its tensor file is
complete, so a process killed at any point leaves a readable partial dump."""

from __future__ import annotations

import datetime
import json
import math
import os
from collections.abc import Collection
from pathlib import Path

import numpy as np
import torch

from ..compat import FakeTensor, pytree
from .recorded_views import RecordedViews
from .stats import content_hash, pieces, tensor_stats

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


def stored_dtype(tensor: torch.Tensor) -> np.dtype:
    """The numpy dtype of `tensor`'s .npy file (to_numpy's), without converting it."""
    if tensor.dtype in _WIDENED:
        return np.dtype(np.float32)
    return torch.empty(0, dtype=tensor.dtype).numpy().dtype


def dumpable(value) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and value.layout == torch.strided
        and not value.is_quantized
        and value.device.type != "meta"
        and not isinstance(value, FakeTensor)
    )


def nonfinite_constant(args, kwargs=None) -> bool:
    """Whether a call's arguments hold a non-finite number given as a constant (a Python float,
    or a 0-dim tensor such as a wrapped scalar): masked_fill(mask, -inf), a causal mask filled
    with -inf. The Inf or NaN the op then writes is meant, not an overflow (docs/dump-format.md)."""
    for leaf in pytree.tree_leaves((args, kwargs or {})):
        if isinstance(leaf, float) and not math.isfinite(leaf):
            return True
        if dumpable(leaf) and leaf.dim() == 0 and leaf.is_floating_point() and not math.isfinite(leaf.item()):
            return True
    return False


def truth_delta(value: np.ndarray, truth: torch.Tensor) -> np.ndarray | None:
    """The compact form of a float64 truth: truth - value in float32 (complex64), so that
    value + delta, added in float64, is the truth within 2^-24 of |truth - value|. None where
    that form would not give the truth back (a difference float32 cannot hold: a value that is
    NaN or overflowed where the truth is finite, or the reverse; a truth of another shape).
    Computed in pieces; a delta of zeros everywhere (a parameter cast up) is a read-only
    broadcast zero that holds no memory."""
    if tuple(truth.shape) != value.shape:
        return None
    compact_dtype = np.complex64 if truth.is_complex() else np.float32
    compact = None
    done = 0
    for value_piece, truth_piece in zip(pieces(value), pieces(truth)):
        exact = to_numpy(truth_piece)
        wide = value_piece.astype(exact.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            delta = np.asarray(exact - wide)  # an array even for 0-dim values
            undefined = ~np.isfinite(delta)
            if undefined.any():  # equal infinities and NaN in both differ by 0
                same = (exact == wide) | (np.isnan(exact) & np.isnan(wide))
                delta[undefined & same] = 0
        piece = delta.astype(compact_dtype).reshape(-1)
        if not np.isfinite(piece).all():
            return None
        if compact is None and piece.any():
            compact = np.zeros(value.size, compact_dtype)
        if compact is not None:
            compact[done : done + piece.size] = piece
        done += piece.size
    if compact is None:
        return np.broadcast_to(np.zeros((), compact_dtype), value.shape)
    return compact.reshape(value.shape)


class DumpWriter:
    def __init__(
        self,
        directory: str | os.PathLike,
        header: dict,
        *,
        stats_only: bool = False,
        tensor_io: Collection[str] = ("input", "output"),
        max_bytes: int | None = None,
        reserved_bytes: int = 0,
    ):
        self.directory = Path(directory)
        (self.directory / "tensors").mkdir(parents=True, exist_ok=True)
        self.stats_only = stats_only
        self.tensor_io = tensor_io  # sides whose records keep their tensor files
        self.max_bytes = max_bytes
        # of max_bytes, what only `needed` records may use (write_tensor) until they have used it
        self.reserved_bytes = min(reserved_bytes, max_bytes or 0)
        self.written_bytes = 0
        self.needed_bytes = 0  # written for needed records
        self.records = 0
        self.budget_reached = False  # a record was left out by the budget
        self.not_kept = {"stats_only": 0, "budget": 0}  # records without a tensor file, by why
        self._closed = False
        # _file_key of each tensor file written -> its name
        self._files: dict[tuple, str] = {}
        self.views = RecordedViews()  # of the records written with `reuse`
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
        needed: bool = False,
        reuse: bool = False,
    ) -> None:
        """Appends a `tensor` record. `record` holds seq, op_key, io, index and the optional
        fields; dtype, shape, stride, stats and file are filled in here. With `truth` (the
        tensor's float64 shadow) the record also gets its truth, written beside `file` as
        `truth_delta_file` (`truth_file` where the compact form would lose it) and counted in
        the same budget (both or neither); `precision` is the lowest floating precision the
        value was computed from. A record whose tensor is not written says why in `not_kept`.
        A `needed` record (one a check cannot do without: the inputs of an op signature's first
        call, for the single-op check) may use the whole budget, the reserved part included. Past
        the budget a record is kept whenever it still fits (a small tensor after a large one
        left out). `reuse`: the caller tells `views` of every write (the eager dump mode), so
        the statistics of the same view recorded before are this record's (recorded_views.py)."""
        stats = self.views.stats(tensor) if reuse else None
        array = None
        if stats is None:
            array = to_numpy(tensor)
            stats = tensor_stats(tensor, array)
            if reuse:
                self.views.add(tensor, stats)
        full = {
            "type": "tensor",
            **record,
            "dtype": str(tensor.dtype),
            "shape": list(tensor.shape),
            "stride": list(tensor.stride()),
            "stats": stats,
        }
        if precision is not None:
            full["precision"] = str(precision)
        stats_only = self.stats_only or record["io"] not in self.tensor_io
        reason = "stats_only" if stats_only else None
        descr = stored_dtype(tensor)
        value_file = ((descr.str, tensor.numel(), stats["hash"]), descr.itemsize * tensor.numel())
        if reason is None and not self._fits([value_file], needed):  # the value alone: its truth is not computed
            reason = self._left_out()
        if reason is None:
            array = to_numpy(tensor) if array is None else array
            name = _file_name(record)
            files = [("file", name, array, stats["hash"])]
            truth_is_value = False
            if truth is not None:
                delta = truth_delta(array, truth)
                stem = name[: -len(".npy")]
                truth_is_value = delta is not None and not delta.any()
                if delta is None:
                    truth_array = to_numpy(truth)
                    files.append(("truth_file", stem + ".truth.npy", truth_array, content_hash(truth_array)))
                elif not truth_is_value:
                    files.append(("truth_delta_file", stem + ".truth_delta.npy", delta, content_hash(delta)))
            reason = self._store(files, full, needed)
            if reason is None and truth_is_value:  # a parameter or input cast up: its file read as float64
                full["truth_file"] = full["file"]
        if reason is not None:
            full["not_kept"] = reason
            self.not_kept[reason] += 1
        self._append(full)
        self.records += 1

    def close(self) -> None:
        if self._closed:
            return
        self._append({"type": "end", "records": self.records})
        self._manifest.close()
        self._closed = True

    def _store(self, files: list[tuple], record: dict, needed: bool) -> str | None:
        """Writes `files` ((field, name, array, hash) each) unless the budget forbids, naming
        each in `record`; a file whose contents were written before is that file again and
        costs nothing. Returns "budget" when the budget stopped them (then none is written)."""
        sized = [(_file_key(array, digest), array.nbytes) for _, _, array, digest in files]
        if not self._fits(sized, needed):
            return self._left_out()
        size = self._new_bytes(sized)
        for field_name, name, array, digest in files:
            key = _file_key(array, digest)
            if key not in self._files:
                path = self.directory / "tensors" / name
                # a new file, never the old one written into: the engine links equal tensor files
                # of a diagnosis's runs to one another (a run done again in its folder on --resume)
                path.unlink(missing_ok=True)
                with open(path, "wb") as f:
                    np.lib.format.write_array(f, array, allow_pickle=False)
                self._files[key] = name
            record[field_name] = f"tensors/{self._files[key]}"
        self.written_bytes += size
        self.needed_bytes += size if needed else 0
        return None

    def _new_bytes(self, sized: list[tuple]) -> int:
        return sum(nbytes for key, nbytes in sized if key not in self._files)

    def _fits(self, sized: list[tuple], needed: bool) -> bool:
        """Whether the files ((_file_key, bytes) each) not written before still fit: in the
        whole budget for a needed record, in what the needed records' unused reserve leaves for
        the others."""
        if self.max_bytes is None:
            return True
        unused_reserve = max(0, self.reserved_bytes - self.needed_bytes)
        limit = self.max_bytes - (0 if needed else unused_reserve)
        return self.written_bytes + self._new_bytes(sized) <= limit

    def _left_out(self) -> str:
        if not self.budget_reached:  # said once, before the first record left out
            self._append({"type": "budget", "limit_bytes": self.max_bytes, "written_bytes": self.written_bytes})
        self.budget_reached = True
        return "budget"

    def _append(self, record: dict) -> None:
        self._manifest.write(json.dumps(record, allow_nan=False) + "\n")
        self._manifest.flush()


def _file_key(array: np.ndarray, digest: str) -> tuple:
    """Equal contents share one file whatever shape each record views them at (the record's
    `shape` rules): the npy descr, the element count and the hash of the bytes."""
    return (array.dtype.str, array.size, digest)


def _file_name(record: dict) -> str:
    item = f".{record['item']}" if record.get("item") is not None else ""
    return f"{record['seq']:07d}.{record['io']}.{record['index']}{item}.npy"
