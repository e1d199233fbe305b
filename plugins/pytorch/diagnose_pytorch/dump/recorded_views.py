"""The statistics of the views an eager dump recorded during one call, so that a view recorded
again is not walked and hashed again: a weight read by `embedding` and by `t`, `t`'s output as
`mm`'s input, an op's output as the next op's input. At scale the weights' records are most of
the bytes an eager ATen dump walks (each weight and its transposed view, the tied 151936 x 896
embedding four times).

A view's statistics are reused while nothing wrote its storage: the eager dump mode sees every
op of the call and forgets the storages an op writes (its schema's mutable arguments) before
the op's outputs are recorded, the version counter in the key catches a write it did not see,
and everything is forgotten at the end of each call (the user's code may write between calls)."""

from __future__ import annotations

import torch
from torch.multiprocessing.reductions import StorageWeakRef


def _storage_id(tensor: torch.Tensor) -> int | None:
    try:
        return tensor.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None


def _view_key(tensor: torch.Tensor) -> tuple | None:
    """The memory a tensor views and how, with its version counter: equal keys, equal contents
    (while the storage lives). None where there is no storage or no version counter (inference
    tensors)."""
    storage = _storage_id(tensor)
    try:
        version = tensor._version
    except RuntimeError:
        return None
    if storage is None:
        return None
    geometry = (tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()))
    return (storage, *geometry, tensor.dtype, tensor.is_conj(), tensor.is_neg(), version)


class RecordedViews:
    def __init__(self):
        # view key -> (a weak reference to its storage, the statistics recorded for it); the weak
        # reference keeps the storage's identity from going to another storage while it is held
        self._stats: dict[tuple, tuple[StorageWeakRef, dict]] = {}

    def stats(self, tensor: torch.Tensor) -> dict | None:
        """The statistics recorded for this view of the same contents, if any."""
        key = _view_key(tensor)
        found = self._stats.get(key) if key is not None else None
        if found is None or found[0].expired():
            return None
        return dict(found[1])

    def add(self, tensor: torch.Tensor, stats: dict) -> None:
        key = _view_key(tensor)
        if key is not None:
            self._stats[key] = (StorageWeakRef(tensor.untyped_storage()), dict(stats))

    def forget(self, tensors) -> None:
        """The views of the storages of `tensors`, which an op is writing."""
        storages = {_storage_id(t) for t in tensors}
        if storages and self._stats:
            self._stats = {key: value for key, value in self._stats.items() if key[0] not in storages}

    def clear(self) -> None:
        self._stats.clear()
