"""msit's seven comparison metrics and diagnose's extra ones, in float64 numpy.

Formulas exactly as in shared/reference/msit-compare.md; an independent oracle for the C++
(which accumulates in double over float32 inputs). Inputs are the float32 values both sides
decode to; every formula is evaluated in float64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

try:
    from .fixtures.dtypes import ulp_at
except ImportError:  # imported as a top-level module with tests/python on sys.path
    from fixtures.dtypes import ulp_at

EPS = 2.0 ** -23  # float32 machine epsilon, compared strictly (`>`)


def as_f32_values(x) -> np.ndarray:
    """What msit works on: the data converted to float32, flattened, held in float64."""
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64).reshape(-1)


def cosine_unrounded(g: np.ndarray, m: np.ndarray) -> float:
    if not np.any(g) and not np.any(m):
        return 1.0
    gn = max(float(np.sqrt(np.sum(g * g))), 1e-8)
    mn = max(float(np.sqrt(np.sum(m * m))), 1e-8)
    return float(np.sum((g / gn) * (m / mn)))


def cosine_similarity(g, m) -> float:
    return round(cosine_unrounded(g, m), 10)


def _masked(g, values):
    return np.where(np.abs(g) > EPS, values, 0.0)


def relative_errors(g, m):
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = _masked(g, np.abs(m / np.where(g == 0, 1.0, g) - 1.0))
    return float(rel.max()), float(rel.sum() / g.size)


def absolute_errors(g, m):
    ab = _masked(g, np.abs(m - g))
    return float(ab.max()), float(ab.sum() / g.size)


def _log_softmax(x):
    shifted = x - x.max()
    return shifted - math.log(float(np.sum(np.exp(shifted))))


def kl_divergence(g, m) -> float:
    log_p = _log_softmax(g)
    log_q = _log_softmax(m)
    p = np.exp(log_p)
    terms = np.where(p > 0, p * (log_p - log_q), 0.0)
    return max(0.0, float(terms.sum()))


def relative_euclidean_distance(g, m) -> float:
    s = float(np.sum(g * g))
    if math.sqrt(s) <= EPS:
        return 0.0
    return math.sqrt(float(np.sum((m - g) ** 2)) / s)


def rmse(a, b) -> float:
    return math.sqrt(float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


def snr_db(g, m) -> float:
    noise = float(np.sum((m - g) ** 2))
    signal = float(np.sum(g * g))
    if noise == 0:
        return math.inf
    if signal == 0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def allclose_violations(g, m, atol: float, rtol: float) -> int:
    return int(np.count_nonzero(np.abs(m - g) > atol + rtol * np.abs(g)))


def ulp_errors(g, m, target_short: str):
    """max and mean of |m - g| / ulp(target dtype at |g|)."""
    u = np.abs(m - g) / ulp_at(target_short, g)
    return float(u.max()), float(u.mean())


def side_stats(x):
    """max, min, mean on float32 data (msit's golden_/my_ value columns)."""
    return float(x.max()), float(x.min()), float(np.mean(x))


@dataclass
class Metrics:
    cosine_similarity: float
    cosine_unrounded: float
    max_relative_error: float
    mean_relative_error: float
    max_absolute_error: float
    mean_absolute_error: float
    kl_divergence: float
    relative_euclidean_distance: float
    rmse: float
    snr_db: float


def compute(golden, mine) -> Metrics:
    """All metrics for one pair; caller guarantees equal sizes and no NaN/Inf."""
    g, m = as_f32_values(golden), as_f32_values(mine)
    max_rel, mean_rel = relative_errors(g, m)
    max_abs, mean_abs = absolute_errors(g, m)
    cu = cosine_unrounded(g, m)
    return Metrics(round(cu, 10), cu, max_rel, mean_rel, max_abs, mean_abs, kl_divergence(g, m),
                   relative_euclidean_distance(g, m), rmse(g, m), snr_db(g, m))


def nan_inf_counts(x):
    x = np.asarray(x, dtype=np.float64)
    return int(np.count_nonzero(np.isnan(x))), int(np.count_nonzero(np.isinf(x)))
