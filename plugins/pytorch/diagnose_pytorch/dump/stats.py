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


def tensor_stats(tensor: torch.Tensor, array: np.ndarray) -> dict:
    """min, max, mean and L2 norm over the finite elements (None when there are none),
    NaN and Inf counts, and a hash of `array`, what the writer stores for the tensor. Walked
    in pieces: a large tensor is never held in float64 whole. Floating values are counted and
    bounded in their own dtype (exact) and widened to float64 once, for the sums: the dump's
    largest cost at scale (an eager ATen dump writes every op's inputs and outputs)."""
    values = tensor.detach()
    if values.is_complex():
        values = torch.view_as_real(values)
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
    stats = {"min": low, "max": high, "mean": None, "l2": None, "nan": nan, "inf": inf}
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
    stats["hash"] = content_hash(array)
    return stats
