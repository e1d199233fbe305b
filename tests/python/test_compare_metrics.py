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
    "eps_boundary": ([2.0 ** -23, 1.0], [1.0, 1.0]),
    # KL: softmax over the whole tensor, large logits (stable log-softmax needed)
    "kl_large_logits": ([1000.0, 999.0, -1000.0], [999.0, 1000.0, -1000.0]),
    "negative_scaled": ([-1.0, -2.0, 4.0], [-1.5, -2.5, 3.0]),
    "single": ([3.0], [4.0]),
}


@pytest.fixture(scope="module")
def edge_run(diagnose_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("edges")
    for side in ("g", "m"):
        (root / side).mkdir()
    for name, (g, m) in EDGE_CASES.items():
        np.save(root / "g" / f"{name}.npy", np.array(g, np.float32))
        np.save(root / "m" / f"{name}.npy", np.array(m, np.float32))
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
        for side, a in (("g", g), ("m", m)):
            (root / side).mkdir(exist_ok=True)
            np.save(root / side / f"{name}.npy", a)
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
