"""The fixture generator checked on its own (no binary needed): device-layout encoders
against the reference decode math, narrow-float encoders against torch, GE file framing."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from fixtures import device_layouts as L
from fixtures import ge_proto
from fixtures.dtypes import DTYPES, E4M3FN_TABLE, E5M2_TABLE, ulp_at
from fixtures.ge_dump import GeOp, GeTensor, encode_ge_dump, ge_file_name


@pytest.mark.parametrize("shape", [(8, 40), (3, 17, 33), (1, 5)])
def test_fractal_nz_roundtrip_with_padding(shape):
    x = np.random.default_rng(1).standard_normal(shape)
    dev = L.encode_fractal_nz(x, c0=16, ni=16)
    assert dev.shape[-4:] == (-(-shape[-1] // 16), -(-shape[-2] // 16), 16, 16)
    assert np.array_equal(L.decode_fractal_nz(dev, shape), x)
    assert np.count_nonzero(dev == 777.0) == dev.size - x.size


def test_nc1hwc0_and_fractal_z_roundtrip_with_padding():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 20, 4, 3))
    dev = L.encode_nc1hwc0(x)
    assert dev.shape == (2, 2, 4, 3, 16)
    assert np.array_equal(L.decode_nc1hwc0(dev, x.shape), x)
    w = rng.standard_normal((18, 20, 3, 3))
    dev = L.encode_fractal_z(w)
    assert dev.shape == (2 * 3 * 3, 2, 16, 16)
    assert np.array_equal(L.decode_fractal_z(dev, w.shape), w)


def test_fp8_tables_match_torch():
    torch = pytest.importorskip("torch")
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    for table, tdtype in ((E4M3FN_TABLE, torch.float8_e4m3fn), (E5M2_TABLE, torch.float8_e5m2)):
        theirs = codes.view(tdtype).to(torch.float64).numpy()
        assert np.array_equal(np.isnan(theirs), np.isnan(table))
        finite = ~np.isnan(table)
        assert np.array_equal(theirs[finite], table[finite])


@pytest.mark.parametrize(
    "short,tname", [("fp8_e4m3fn", "float8_e4m3fn"), ("fp8_e5m2", "float8_e5m2"), ("bf16", "bfloat16")]
)
def test_narrow_float_rounding_matches_torch(short, tname):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal(4000) * 30
    ours = DTYPES[short].representable(x)
    theirs = torch.from_numpy(x.astype(np.float32)).to(getattr(torch, tname)).to(torch.float64).numpy()
    assert np.array_equal(ours, theirs)


def test_int4_and_uint1_packing():
    v = np.array([-8, -1, 0, 7, 3])
    assert DTYPES["int4"].encode(v) == bytes([0xF8, 0x70, 0x03])
    assert np.array_equal(DTYPES["int4"].representable(v), v)
    bits = np.array([1, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    assert DTYPES["uint1"].encode(bits) == bytes([0x01, 0x03])


def test_ulp_geometry():
    assert ulp_at("fp16", np.array([1.0]))[0] == 2.0**-10
    assert ulp_at("fp16", np.array([0.0]))[0] == 2.0**-24
    assert ulp_at("bf16", np.array([3.0]))[0] == 2.0**-6
    assert ulp_at("fp32", np.array([1.9999999]))[0] == 2.0**-23
    assert ulp_at("int8", np.array([5.0]))[0] == 1.0


def test_ge_dump_framing_and_names():
    op = GeOp(
        "Add",
        "layer/Add 1.x",
        [GeTensor(np.ones((2, 3)), "fp16")],
        [GeTensor(np.zeros((8, 40)), "fp32", "FRACTAL_NZ")],
        task_id=4,
        stream_id=2,
        timestamp=1700000000000042,
    )
    data = encode_ge_dump(op)
    (hlen,) = struct.unpack_from("<Q", data)
    header = ge_proto.DUMP["DumpData"].FromString(data[8 : 8 + hlen])
    sizes = [i.size for i in header.input] + [o.size for o in header.output]
    assert 8 + hlen + sum(sizes) == len(data)
    assert list(header.output[0].shape.dim) == [3, 1, 16, 16]
    assert list(header.output[0].original_shape.dim) == [8, 40]
    assert header.output[0].format == 29 and header.input[0].data_type == 2
    assert ge_file_name(op) == "Add.layer_Add_1_x.4.2.1700000000000042"
    op.ffts_plus = True
    assert ge_file_name(op) == "Add.layer_Add_1_x.2.4.1700000000000042.1.0.0.0"


def test_generator_cli(tmp_path):
    import subprocess
    import sys

    from fixtures.compare_cli import REPO

    for args in (
        ["torchair", "--out", str(tmp_path / "ta"), "--fx-layout", "old", "--no-rank-dirs", "--planted", "Mul=0.5"],
        ["chain", "--out", str(tmp_path / "ch"), "--format", "npy"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "tests.python.fixtures.gen", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "ta" / "fx" / "data_dump" / "1").glob("gm_*_dump/*.npy"))
    assert list((tmp_path / "ta" / "ge").glob("dynamo_original_graph_*.txt"))
    assert len(list((tmp_path / "ch" / "golden").glob("*.npy"))) == 12
