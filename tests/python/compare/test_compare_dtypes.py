"""Every supported dtype and device layout, GE dump file against GE dump file: values decoded
exactly (checked through the metrics against the float64 reference on the same values)."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.compare_cli import check_metrics, path_parts, run_compare
from fixtures.dtypes import DTYPES
from fixtures.ge_dump import GeOp, GeTensor, write_ge_dump

FLOAT_TYPES = ["fp32", "fp16", "bf16", "fp64", "fp8_e4m3fn", "fp8_e5m2"]
INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "int4"]


def _values(short, rng, shape):
    if short in FLOAT_TYPES or short == "complex64":
        scale = 8.0 if short.startswith("fp8") else 3.0
        return rng.standard_normal(shape) * scale
    if short in ("bool", "uint1"):
        return (rng.random(shape) > 0.5).astype(np.float64)
    lo, hi = {"int4": (-8, 8), "int8": (-100, 100), "uint8": (0, 250)}.get(short, (-3000, 3000))
    if short.startswith("uint"):
        lo = 0
    return rng.integers(lo, hi, shape).astype(np.float64)


def _perturb(short, x, rng):
    if short in ("bool", "uint1"):
        y = x.copy()
        y.flat[::7] = 1 - y.flat[::7]
        return y
    if short in INT_TYPES:
        y = x + rng.integers(-1, 2, x.shape)
        return np.clip(
            y, 0 if short.startswith("uint") else -8 if short == "int4" else -1e9, 7 if short == "int4" else 1e9
        )
    return x * (1 + 0.01 * rng.standard_normal(x.shape))


def _ge_file(directory, values, short, fmt="ND", name="Op", c0=16):
    op = GeOp("Custom", name, [GeTensor(values, short, fmt, c0=c0)], [GeTensor(values, short, fmt, c0=c0)])
    return write_ge_dump(directory, op)


@pytest.mark.parametrize("short", FLOAT_TYPES + INT_TYPES + ["bool", "uint1", "complex64"])
def test_dtype_decoded_exactly(diagnose_bin, tmp_path, short):
    rng = np.random.default_rng(sum(map(ord, short)))
    shape = (5, 13) if short != "complex64" else (4, 6)
    if short == "complex64":
        g = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        m = g * (1 + 0.01 * rng.standard_normal(shape))
    else:
        g = _values(short, rng, shape)
        m = _perturb(short, g, rng)
    d = DTYPES[short]
    gf = _ge_file(tmp_path / "g", g, short)
    mf = _ge_file(tmp_path / "m", m, short)
    run = run_compare(diagnose_bin, gf, mf, tmp_path / "out")
    assert run.result is not None, run.describe()
    assert run.result["golden"]["kind"] == "ge_dump_file"
    rows = run.rows()
    assert len(rows) == 2, [r["my_data_path"] for r in rows]
    g_exact, m_exact = d.representable(g).reshape(-1), d.representable(m).reshape(-1)
    for row in rows:
        assert row["my_dtype"] == d.torch_name and row["golden_dtype"] == d.torch_name, row
        assert row["my_shape"] == list(shape), row
        errors = check_metrics(
            row, g_exact, m_exact, target_short=short if d.is_float and short != "complex64" else None
        )
        assert not errors, f"{short} {path_parts(row['my_data_path'])}:\n" + "\n".join(errors)


@pytest.mark.parametrize(
    "fmt,shape",
    [
        ("FRACTAL_NZ", (8, 40)),
        ("FRACTAL_NZ", (3, 17, 33)),
        ("NC1HWC0", (2, 20, 4, 3)),
        ("FRACTAL_Z", (18, 20, 3, 3)),
        ("NHWC", (2, 5, 4, 3)),
    ],
)
@pytest.mark.parametrize("short", ["fp16", "fp32"])
def test_device_layout_against_nd(diagnose_bin, tmp_path, fmt, shape, short):
    """Golden stored ND, mine in a private layout with padding: must equal the logical tensor."""
    rng = np.random.default_rng(5)
    g = rng.standard_normal(shape)
    m = g * (1 + 0.001 * rng.standard_normal(shape))
    gf = _ge_file(tmp_path / "g", g, short, "NCHW" if len(shape) == 4 else "ND")
    mf = _ge_file(tmp_path / "m", m, short, fmt)
    run = run_compare(diagnose_bin, gf, mf, tmp_path / "out")
    assert run.result is not None, run.describe()
    rows = run.rows()
    assert len(rows) == 2
    d = DTYPES[short]
    for row in rows:
        assert row["my_shape"] == list(shape), f"{fmt}: logical shape expected, got {row['my_shape']}"
        assert not row["cmp_fail_reason"], row["cmp_fail_reason"]
        errors = check_metrics(row, d.representable(g).ravel(), d.representable(m).ravel())
        assert not errors, f"{fmt} {shape}:\n" + "\n".join(errors)


@pytest.mark.parametrize("short", ["bf16", "fp8_e4m3fn", "fp8_e5m2", "fp16", "int8", "bool"])
def test_manifest_dtypes_including_raw_bits(diagnose_bin, tmp_path, short):
    """The project's dump stores bf16 / float8 as raw bits (<u2 / |u1) with the torch dtype in
    the record; the reader must reinterpret them, not compare the integers."""
    from fixtures.chains import make_chain, write_chain_manifests

    ops = make_chain(n_ops=2, planted=1, shape=(6, 10), dtype=short, seed=9, error=0.05)
    write_chain_manifests(tmp_path / "g", tmp_path / "m", ops, dtype=short)
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out")
    assert run.result is not None, run.describe()
    d = DTYPES[short]
    rows = {(r["op_key"], r["io"]): r for r in run.rows()}
    assert len(rows) == 4
    for op in ops:
        for io, g, m in (("input", op.golden_in, op.mine_in), ("output", op.golden_out, op.mine_out)):
            row = rows[(op.op_key, io)]
            assert row["my_dtype"] == d.torch_name and row["golden_dtype"] == d.torch_name, row
            errors = check_metrics(row, g.ravel(), m.ravel(), target_short=short if d.is_float else None)
            assert not errors, f"{short} {op.op_key} {io}:\n" + "\n".join(errors)


@pytest.mark.parametrize(
    "fmt,shape", [("FRACTAL_NZ", (2, 19, 70)), ("NC1HWC0", (1, 40, 3, 2)), ("FRACTAL_Z", (20, 33, 2, 2))]
)
@pytest.mark.parametrize("short,c0", [("bf16", 16), ("fp32", 8), ("int8", 32)])
def test_device_layout_block_widths(diagnose_bin, tmp_path, fmt, shape, short, c0):
    """C0 is 32 bytes / element size on device (8 for fp32, 16 for fp16/bf16, 32 for int8);
    the reader takes it from the device shape."""
    rng = np.random.default_rng(6)
    g = rng.standard_normal(shape) * (30 if short == "int8" else 1)
    m = g + (rng.integers(-1, 2, shape) if short == "int8" else 0.01 * rng.standard_normal(shape))
    gf = _ge_file(tmp_path / "g", g, short, "NCHW" if len(shape) == 4 else "ND")
    mf = _ge_file(tmp_path / "m", m, short, fmt, c0=c0)
    run = run_compare(diagnose_bin, gf, mf, tmp_path / "out")
    assert run.result is not None, run.describe()
    d = DTYPES[short]
    for row in run.rows():
        assert row["my_shape"] == list(shape) and not row["cmp_fail_reason"], row
        errors = check_metrics(row, d.representable(g).ravel(), d.representable(m).ravel())
        assert not errors, f"{fmt} {short} c0={c0}:\n" + "\n".join(errors)
