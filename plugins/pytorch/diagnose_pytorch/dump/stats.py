"""Summary statistics of a tensor, as written into `stats` of a dump record."""

from __future__ import annotations

import hashlib
import math

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
        # scaled by the largest magnitude, so float64 values near its limits (finfo.min masks) do
        # not overflow the sums; a norm beyond float64's range is unknown (None), never inf
        scale = max(abs(float(low)), abs(float(high))) or 1.0
        scaled = finite / scale
        mean, l2 = float(scaled.mean()) * scale, float(torch.linalg.vector_norm(scaled)) * scale
        stats.update(
            min=float(low),
            max=float(high),
            mean=mean if math.isfinite(mean) else None,
            l2=l2 if math.isfinite(l2) else None,
        )
    stats["hash"] = content_hash(data)
    return stats
