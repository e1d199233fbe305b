"""Summary statistics of a tensor, as written into `stats` of a dump record."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import torch

# Elements per piece when a large tensor is walked in pieces (`pieces`): 32 MB in float64, so
# that the statistics, hashes and truths of a 545 MB embedding never hold a float64 copy of it.
PIECE_ELEMENTS = 1 << 22


def pieces(value):
    """Slices of `value` (a tensor or numpy array) along its leading dimension (leading
    dimensions of size 1 dropped) that cover it once, in C order, each about PIECE_ELEMENTS long."""
    elements = PIECE_ELEMENTS
    while len(value.shape) > 1 and value.shape[0] == 1:
        value = value[0]
    count = math.prod(value.shape)
    if len(value.shape) == 0 or count <= elements:
        yield value
        return
    rows = max(1, elements // max(1, count // value.shape[0]))
    for start in range(0, value.shape[0], rows):
        yield value[start : start + rows]


def content_hash(array: np.ndarray) -> str:
    """The hash of a C-ordered array's bytes (equal to hashing its tobytes(), without the copy)."""
    return hashlib.blake2b(np.ascontiguousarray(array).reshape(-1).view(np.uint8), digest_size=16).hexdigest()


def memory_order(values: torch.Tensor) -> torch.Tensor:
    """`values` with its dimensions permuted into the order its strides lay them out in memory
    (a view, no copy), where that makes it contiguous: a transposed weight is walked as stored
    instead of copied. `values` itself otherwise. Only for order-free reductions."""
    if values.dim() < 2 or values.is_contiguous():
        return values
    order = sorted(range(values.dim()), key=values.stride, reverse=True)
    permuted = values.permute(order)
    return permuted if permuted.is_contiguous() else values


def _sums_in_one_walk(values: torch.Tensor) -> tuple | None:
    """(low, high, count, sum, sum of squares) of `values` in one walk, each piece widened to
    float64 once; None where a value is NaN or Inf, or the dtype is float64 (whose sums could
    overflow without scaling). Below float64 the sums cannot overflow (the largest float32
    squared, times 2^40 elements, is about 1e89), so a finite sum says every element is finite."""
    if values.dtype == torch.float64:
        return None
    low = high = None
    count = 0
    total = squares = 0.0
    for part in pieces(values):
        part = part.reshape(-1)
        wide = part.to(torch.float64)
        piece_total = float(wide.sum())
        if not math.isfinite(piece_total):
            return None
        if part.numel():
            piece_low, piece_high = (float(v) for v in torch.aminmax(part if part.is_floating_point() else wide))
            low = piece_low if low is None else min(low, piece_low)
            high = piece_high if high is None else max(high, piece_high)
        count += part.numel()
        total += piece_total
        squares += float(torch.linalg.vector_norm(wide)) ** 2
    return low, high, count, total, squares


def tensor_stats(tensor: torch.Tensor, array: np.ndarray) -> dict:
    """min, max, mean and L2 norm over the finite elements (None when there are none),
    NaN and Inf counts, and a hash of `array`, what the writer stores for the tensor. Walked
    in pieces, in memory order: a large tensor is never held in float64 whole, nor copied to
    be walked. Below float64 with every element finite (the common case) one walk does it all
    (_sums_in_one_walk); otherwise floating values are counted and bounded in their own dtype
    (exact) and widened to float64 for the sums, scaled by the largest magnitude. The dump's
    largest cost at scale (an eager ATen dump writes every op's inputs and outputs)."""
    values = tensor.detach()
    if values.is_complex():
        values = torch.view_as_real(values)
    values = memory_order(values)
    stats = {"min": None, "max": None, "mean": None, "l2": None, "nan": 0, "inf": 0}
    stats["hash"] = content_hash(array)
    walked = _sums_in_one_walk(values)
    if walked is not None:
        low, high, count, total, squares = walked
        if count:
            stats.update(min=low, max=high, mean=total / count, l2=math.sqrt(squares))
        return stats
    nan = inf = count = 0
    low = high = None
    for part in pieces(values):
        part = (part if part.is_floating_point() else part.to(torch.float64)).reshape(-1)
        finite = part
        if not bool(torch.isfinite(part).all()):
            nan += int(torch.isnan(part).sum())
            inf += int(torch.isinf(part).sum())
            finite = part[torch.isfinite(part)]
        if finite.numel():
            piece_low, piece_high = (float(v) for v in torch.aminmax(finite))
            low = piece_low if low is None else min(low, piece_low)
            high = piece_high if high is None else max(high, piece_high)
            count += finite.numel()
    stats.update(min=low, max=high, nan=nan, inf=inf)
    if count:
        # scaled by the largest magnitude, so float64 values near its limits (finfo.min masks) do
        # not overflow the sums; a norm beyond float64's range is unknown (None), never inf
        scale = max(abs(low), abs(high)) or 1.0
        total = squares = 0.0
        for part in pieces(values):
            wide = part.to(torch.float64).reshape(-1)
            if nan or inf:
                wide = wide[torch.isfinite(wide)]
            scaled = wide / scale
            total += float(scaled.sum())
            squares += float(torch.linalg.vector_norm(scaled)) ** 2
        mean, l2 = total / count * scale, math.sqrt(squares) * scale
        stats.update(mean=mean if math.isfinite(mean) else None, l2=l2 if math.isfinite(l2) else None)
    return stats
