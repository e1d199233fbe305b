"""Metric edge cases straight from the formulas in msit-compare.md, and large tensors whose
streaming / multi-threaded accumulation (online softmax for KL) must match the float64
reference to 1e-6 whatever the thread count."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.compare_cli import check_metrics, run_compare

EDGE_CASES = {
    # both norms below 1e-8: the clamp makes cosine = sum(g*m) / 1e-16, not 1
    "tiny_norms": ([1e-9, 2e-9], [1e-9, 2e-9]),
    # sqrt(sum g^2) <= eps: relative Euclidean distance is 0 by definition
    "tiny_golden_red": ([1e-8, 0.0], [1.0, 1.0]),
    # |g| > eps strictly: exactly eps is masked
    "eps_boundary": ([2.0**-23, 1.0], [1.0, 1.0]),
    # KL: softmax over the whole tensor, large logits (stable log-softmax needed)
    "kl_large_logits": ([1000.0, 999.0, -1000.0], [999.0, 1000.0, -1000.0]),
    "negative_scaled": ([-1.0, -2.0, 4.0], [-1.5, -2.5, 3.0]),
    "single": ([3.0], [4.0]),
    # errors that overflow float32 (measured in float, then again in double)
    "relative_error_over_float_max": ([2e-7, 1.0], [3e38, 1.0]),
    "difference_over_float_max": ([-3e38, 1.0], [3e38, 1.0]),
}


def _save_pairs(root, cases: dict) -> None:
    """Saves each (golden, mine) pair as root/g/NAME.npy and root/m/NAME.npy."""
    for side in ("g", "m"):
        (root / side).mkdir()
    for name, (golden, mine) in cases.items():
        np.save(root / "g" / f"{name}.npy", golden)
        np.save(root / "m" / f"{name}.npy", mine)


@pytest.fixture(scope="module")
def edge_run(diagnose_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("edges")
    _save_pairs(root, {name: (np.array(g, np.float32), np.array(m, np.float32)) for name, (g, m) in EDGE_CASES.items()})
    return run_compare(diagnose_bin, root / "g", root / "m", root / "out")


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_case_metrics(edge_run, name):
    assert edge_run.result is not None, edge_run.describe()
    row = next(r for r in edge_run.rows() if r["golden_data_path"].endswith(f"/{name}.npy"))
    g, m = EDGE_CASES[name]
    errors = check_metrics(row, np.array(g, np.float32), np.array(m, np.float32), "fp32")
    assert not errors, "\n".join(errors)


@pytest.fixture(scope="module")
def large_pair(tmp_path_factory):
    """3M-element fp16 and fp32 tensors with a heavy tail and the global maximum near the end,
    so partial softmax sums are rescaled when merged."""
    root = tmp_path_factory.mktemp("large")
    rng = np.random.default_rng(8)
    arrays = {}
    for name, dtype, n in (("f16", np.float16, 3_000_001), ("f32", np.float32, 2_500_003)):
        g = (rng.standard_t(3, n) * 2).astype(dtype)
        g[-7] = 30
        m = (g.astype(np.float64) * (1 + 1e-3 * rng.standard_normal(n)) + 1e-3 * rng.standard_normal(n)).astype(dtype)
        arrays[name] = (g, m)
    _save_pairs(root, arrays)
    return root, arrays


@pytest.mark.parametrize("threads", ["1", "2", "5"])
def test_large_tensors_any_thread_count(diagnose_bin, large_pair, tmp_path, threads):
    root, arrays = large_pair
    run = run_compare(diagnose_bin, root / "g", root / "m", tmp_path / "out", "--threads", threads, timeout=120)
    assert run.result is not None, run.describe()
    for name, (g, m) in arrays.items():
        row = next(r for r in run.rows() if r["golden_data_path"].endswith(f"/{name}.npy"))
        short = "fp16" if name == "f16" else "fp32"
        errors = check_metrics(row, g, m, short)
        assert not errors, f"{name} threads={threads}:\n" + "\n".join(errors)


def _kl_cases():
    """KL's hard cases, each spanning dozens of 2048-element blocks: blocks whose |m - g| < 1
    take float weights and a log1p form, the others double sums; both must meet the float64
    reference when KL is tiny next to the sums it comes from."""
    rng = np.random.default_rng(31)
    n = 200_003
    g = (rng.standard_normal(n) * 3).astype(np.float32)
    noise = rng.standard_normal(n).astype(np.float32)
    cases = {
        # softmax ignores a constant: KL = 0 while every e^d term is large
        # (each |m - g| range takes its own number of series terms: below 1/32, 1/4 and 1)
        # (negative shifts too: a truncated series errs upwards there, where KL is not clamped at 0)
        **{f"constant_shift_{c}": (g, g + np.float32(c)) for c in (0.02, -0.03, 0.2, -0.24, 0.75, -0.9)},
        "bias_over_noise": (g, g + np.float32(0.5) + np.float32(1e-3) * noise),
        # KL small but not 0: an error of the series either way shows
        "bias_-0.8_noise": (g, g - np.float32(0.8) + np.float32(0.03) * np.clip(noise, -4.5, 4.5)),
        # one element holds almost all of p
        "dominant": (np.where(np.arange(n) == 150_000, np.float32(60), g), None),
        # two elements share p, with different errors
        "two_peaks": (np.where(np.isin(np.arange(n), [10, 190_000]), np.float32(50), g), None),
    }
    dom = cases.pop("dominant")[0]
    for shift in (0.03, -0.03, 0.2, -0.2, 0.55, -0.55, 0.95, -0.95):
        cases[f"dominant_{shift}"] = (dom, dom + np.float32(shift) + np.float32(1e-3) * noise)
    peaks = cases["two_peaks"][0]
    m = peaks + np.float32(1e-3) * noise
    m[10] += np.float32(0.3)
    cases["two_peaks"] = (peaks, m)
    # a few elements far off, in a handful of blocks, with little weight: KL stays small
    m = g + np.float32(1e-3) * noise
    m[[5, 70_000, 140_001]] += np.float32(5)
    cases["few_far_blocks"] = (g, m)
    # |m - g| < 1 with a spread near 1 around its weighted mean: a few elements carry the
    # largest terms of the e^d series, which must not be truncated early
    for sign in (1, -1):
        m = g + np.float32(1e-3) * noise
        m[rng.random(n) < 0.03] += np.float32(sign * 0.95)
        cases[f"spread_near_1_{sign}"] = (g, m)
    # mine far below golden everywhere (E_p[e^d] near 0), and far above in one element
    cases["mine_far_below"] = (g, g * np.float32(0.5) - np.float32(60))
    m = g + np.float32(1e-3) * noise
    m[99_999] = np.float32(1000)
    cases["mine_far_above"] = (g, m)
    return cases


KL_CASES = _kl_cases()


def _use_kernels(monkeypatch, kernels: str) -> None:
    """Kernels "portable" forces the portable kernel set; "fastest" leaves the choice to the CPU."""
    if kernels == "portable":
        monkeypatch.setenv("DIAGNOSE_PORTABLE_KERNELS", "1")


def _compare_cases(diagnose_bin, tmp_path, cases: dict, target_short: str, *extra) -> list[str]:
    """Saves each (golden, mine) pair as npy files, compares the two directories, and returns
    every metric that differs from the float64 reference."""
    _save_pairs(tmp_path, cases)
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out", *extra)
    assert run.result is not None, run.describe()
    problems = []
    for name, (golden, mine) in cases.items():
        row = next(r for r in run.rows() if r["golden_data_path"].endswith(f"/{name}.npy"))
        problems += [f"{name}: {e}" for e in check_metrics(row, golden, mine, target_short)]
    return problems


@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("kernels", ["fastest", "portable"])
def test_kl_hard_cases(diagnose_bin, tmp_path, monkeypatch, threads, kernels):
    """Both kernel sets (AVX2 where the CPU has it, and the portable one; docs/metrics.md)."""
    _use_kernels(monkeypatch, kernels)
    problems = _compare_cases(diagnose_bin, tmp_path, KL_CASES, "fp32", "--threads", threads)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kernels", ["fastest", "portable"])
def test_kl_of_shifted_float16(diagnose_bin, tmp_path, monkeypatch, kernels):
    """float16 tensors reach the kernels as stored; a common shift over 16-bit rounding noise
    leaves a small KL that must survive the large e^d terms around it."""
    _use_kernels(monkeypatch, kernels)
    rng = np.random.default_rng(5)
    g = (rng.standard_normal(100_003) * 3).astype(np.float16)
    cases = {
        "shift": (g, (g.astype(np.float32) + np.float32(0.7)).astype(np.float16)),
        "shift_noise": (
            g,
            (
                g.astype(np.float32)
                - np.float32(0.4)
                + np.float32(1e-3) * rng.standard_normal(g.size).astype(np.float32)
            ).astype(np.float16),
        ),
    }
    problems = _compare_cases(diagnose_bin, tmp_path, cases, "fp16")
    assert not problems, "\n".join(problems)


def test_npy_variants_read_as_logical(diagnose_bin, tmp_path):
    """Fortran order, big-endian, format v2 and v3 headers, a 0-d scalar: all equal to the plain
    C-order little-endian golden."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 7)).astype(np.float32)
    (tmp_path / "g").mkdir()
    (tmp_path / "m").mkdir()
    variants = {
        "fortran": np.asfortranarray(x),
        "big_endian": x.astype(">f4"),
        "v2": x,
        "v3": x,
        "scalar": np.array(np.float32(1.5)),
    }
    for name, arr in variants.items():
        golden = np.array(np.float32(1.5)) if name == "scalar" else x
        np.save(tmp_path / "g" / f"{name}.npy", golden)
        path = tmp_path / "m" / f"{name}.npy"
        if name in ("v2", "v3"):
            with open(path, "wb") as f:
                version = (2, 0) if name == "v2" else (3, 0)
                np.lib.format.write_array(f, arr, version=version)
        else:
            np.save(path, arr)
    assert np.load(tmp_path / "m" / "fortran.npy").flags.f_contiguous
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out")
    assert run.result is not None, run.describe()
    rows = {r["my_data_path"].rsplit("/", 1)[-1][:-4]: r for r in run.rows()}
    for name in variants:
        r = rows[name]
        assert r["verdict"] == "pass" and r["max_absolute_error"] == 0.0 and r["cosine_similarity"] == 1.0, (name, r)
        assert r["my_shape"] == ([] if name == "scalar" else [5, 7]), (name, r["my_shape"])


def _sweep_cases():
    """Sizes around SIMD / chunk boundaries, value ranges from subnormal to huge, every numpy
    dtype the comparison reads; "mine" is golden perturbed in several ways."""
    rng = np.random.default_rng(77)
    sizes = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 255, 257, 4095, 4097, 65537, 262143, 262145]
    kinds = ["normal", "huge", "subnormal", "signed_zeros", "constant", "heavy_tail", "offset"]
    dtypes = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]
    cases = {}
    for n_case in range(72):
        n = sizes[n_case % len(sizes)]
        kind = kinds[n_case % len(kinds)]
        dtype = dtypes[n_case % len(dtypes)]
        base = {
            "normal": rng.standard_normal(n),
            "huge": rng.standard_normal(n) * 1e30,
            "subnormal": rng.standard_normal(n) * 1e-40,
            "signed_zeros": np.where(rng.random(n) > 0.5, 0.0, -0.0),
            "constant": np.full(n, 3.25),
            "heavy_tail": rng.standard_t(2, n) * 10,
            "offset": 1000 + rng.standard_normal(n),
        }[kind]
        if np.dtype(dtype).kind in "iub":
            info = np.iinfo(dtype) if dtype is not np.bool_ else None
            lo, hi = (0, 2) if info is None else (max(info.min, -100), min(info.max, 100))
            g = rng.integers(lo, hi, n).astype(dtype)
            m = g.copy()
            m[::5] = rng.integers(lo, hi, len(m[::5])).astype(dtype)
        else:
            if dtype is np.float16 and kind == "huge":
                base = base / 1e30 * 6e4
            with np.errstate(over="ignore"):
                g = base.astype(dtype)
                m = (
                    base * (1 + 1e-3 * rng.standard_normal(n)) + 1e-4 * rng.standard_normal(n) * np.abs(base).max()
                ).astype(dtype)
            if not (np.all(np.isfinite(g)) and np.all(np.isfinite(m))):
                continue
        cases[f"case{n_case:02d}_{kind}_{np.dtype(dtype).name}_{n}"] = (g, m)
    return cases


SWEEP = _sweep_cases()


@pytest.fixture(scope="module")
def sweep_run(diagnose_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    _save_pairs(root, SWEEP)
    return run_compare(diagnose_bin, root / "g", root / "m", root / "out", timeout=120)


def test_sweep_every_row_matches_reference(sweep_run):
    assert sweep_run.result is not None, sweep_run.describe()
    rows = {r["golden_data_path"].rsplit("/", 1)[-1][:-4]: r for r in sweep_run.rows()}
    assert set(rows) == set(SWEEP)
    problems = []
    short = {"float32": "fp32", "float16": "fp16", "float64": "fp64"}
    for name, (g, m) in SWEEP.items():
        target = short.get(np.dtype(m.dtype).name)
        errors = check_metrics(rows[name], g.astype(np.float64), m.astype(np.float64), target)
        problems += [f"{name}: {e}" for e in errors]
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:40])
