"""Summary statistics of a tensor, as written into `stats` of a dump record."""

from __future__ import annotations

import hashlib

import torch


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def tensor_stats(tensor: torch.Tensor, data: bytes) -> dict:
    """min, max, mean and L2 norm over the finite elements (None when there are none),
    NaN and Inf counts, and a hash of `data`, the bytes the writer stores for the tensor."""
    values = tensor.detach()
    if values.is_complex():
        values = torch.view_as_real(values)
    values = values.to(torch.float64).reshape(-1)
    nan = int(torch.isnan(values).sum())
    inf = int(torch.isinf(values).sum())
    finite = values[torch.isfinite(values)] if nan or inf else values
    stats = {"min": None, "max": None, "mean": None, "l2": None, "nan": nan, "inf": inf}
    if finite.numel():
        low, high = torch.aminmax(finite)
        stats.update(
            min=float(low), max=float(high), mean=float(finite.mean()), l2=float(torch.linalg.vector_norm(finite))
        )
    stats["hash"] = content_hash(data)
    return stats
