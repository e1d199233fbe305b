"""Judgement: pass/fail from presets, the three-way fp64 referee, manifest dumps, first
divergence and source ops along a chain where one op introduces the error."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.chains import make_chain, write_chain_manifests, write_chain_npy_dirs
from fixtures.compare_cli import check_metrics, run_compare

PLANTED = 3


@pytest.fixture(scope="module")
def chain():
    return make_chain(n_ops=6, planted=PLANTED, seed=3)


def _check_chain_rows(run, ops):
    by_key = {}
    for r in run.rows():
        by_key[(r["op_key"], r["io"], r["index"])] = r
    problems = []
    for i, op in enumerate(ops):
        for io, g, m in (("input", op.golden_in, op.mine_in), ("output", op.golden_out, op.mine_out)):
            row = by_key.get((op.op_key, io, 0))
            if row is None:
                problems.append(f"missing {op.op_key} {io}")
                continue
            problems += [f"{op.op_key} {io}: {e}" for e in check_metrics(row, g, m, "fp32")]
            inherited = i > PLANTED or (i == PLANTED and io == "output")
            want = "fail" if inherited else "pass"
            if row["verdict"] != want:
                problems.append(f"{op.op_key} {io}: verdict {row['verdict']}, want {want}")
    assert not problems, "\n".join(problems)


def test_manifest_vs_manifest_divergence(diagnose_bin, tmp_path, chain):
    write_chain_manifests(tmp_path / "g", tmp_path / "m", chain)
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out")
    assert run.result is not None, run.describe()
    assert run.result["golden"]["kind"] == "diagnose_dump" and run.result["mine"]["kind"] == "diagnose_dump"
    assert run.rc == 1
    _check_chain_rows(run, chain)
    rows = run.rows()
    assert [r["op_key"] for r in rows] == [op.op_key for op in chain for _ in (0, 1)], "rows in seq order"
    (div,) = run.result["summary"]["divergences"]
    planted_key = chain[PLANTED].op_key
    assert div["first_failing_op"] == planted_key and div["source_ops"] == [planted_key], div
    first = next(r for r in rows if r["data_id"] == div["first_failing_data_id"])
    assert first["op_key"] == planted_key and first["io"] == "output"


def test_manifest_multi_rank_and_rank_option(diagnose_bin, tmp_path, chain):
    for rank in (0, 1):
        write_chain_manifests(tmp_path / "g", tmp_path / "m", chain, rank=rank, world_size=2)
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out")
    assert run.result is not None, run.describe()
    assert sorted(g["rank"] for g in run.result["groups"]) == [0, 1]
    assert len(run.csv_files) == 2 and all("_rank" in p.name for p in run.csv_files)
    only = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out1", "-r", "0")
    assert [g["rank"] for g in only.result["groups"]] == [0]


def test_npy_dir_vs_npy_dir_chain(diagnose_bin, tmp_path, chain):
    write_chain_npy_dirs(tmp_path / "g", tmp_path / "m", chain)
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out")
    assert run.result["golden"]["kind"] == "npy_directory", run.describe()
    assert len(run.rows()) == 2 * len(chain)
    by_file = {r["golden_data_path"].rsplit("/", 1)[-1]: r for r in run.rows()}
    for op in chain:
        for io, g, m in (("INPUT", op.golden_in, op.mine_in), ("OUTPUT", op.golden_out, op.mine_out)):
            row = by_file[f"{op.op_key}.{io}.0.npy"]
            assert not check_metrics(row, g, m), check_metrics(row, g, m)


def _referee_case(tmp_path):
    """Golden (fp16 eager) is sloppy, `better` is more accurate than golden against the fp64
    referee, `worse` is less accurate: only `better` may pass through the referee rule."""
    rng = np.random.default_rng(21)
    truth = rng.standard_normal(4096)
    golden = (truth * (1 + 4e-3 * rng.standard_normal(truth.size))).astype(np.float16)
    better = (truth * (1 + 2e-4 * rng.standard_normal(truth.size))).astype(np.float16)
    worse = (truth * (1 + 4e-2 * rng.standard_normal(truth.size))).astype(np.float16)
    g, m, ref = tmp_path / "g", tmp_path / "m", tmp_path / "ref"
    for d in (g, m, ref):
        d.mkdir()
    for name, mine in (("better", better), ("worse", worse)):
        np.save(g / f"{name}.npy", golden)
        np.save(m / f"{name}.npy", mine)
        np.save(ref / f"{name}.npy", truth)
    return g, m, ref, truth, golden, {"better": better, "worse": worse}


STRICT = [
    "--preset",
    "fp16",
    "--tol",
    "fp16.atol=0",
    "--tol",
    "fp16.rtol=0",
    "--tol",
    "fp16.min_cosine=1.0",
    "--tol",
    "fp16.max_relative_l2=0",
]


def test_referee_three_way(diagnose_bin, tmp_path):
    g, m, ref, truth, golden, mine = _referee_case(tmp_path)
    plain = run_compare(diagnose_bin, g, m, tmp_path / "o1", *STRICT)
    assert plain.result is not None, plain.describe()
    assert {r["verdict"] for r in plain.rows()} == {"fail"}, "strict preset alone fails both"
    # atol/rtol as set are an allclose criterion the truth does not override
    strict = run_compare(diagnose_bin, g, m, tmp_path / "o3", "--referee", ref, *STRICT)
    assert {r["verdict"] for r in strict.rows()} == {"fail"}, strict.describe()
    three = run_compare(diagnose_bin, g, m, tmp_path / "o2", "--referee", ref)
    assert three.result is not None, three.describe()
    assert three.result["referee"] is not None
    rows = {r["golden_data_path"].rsplit("/", 1)[-1][:-4]: r for r in three.rows()}
    g64 = golden.astype(np.float64)
    for name, want in (("better", "pass"), ("worse", "fail")):
        r = rows[name]
        assert r["verdict"] == want, (name, r["verdict"], r["judged_by"])
        want_g = np.sqrt(np.mean((g64 - truth) ** 2))
        want_m = np.sqrt(np.mean((mine[name].astype(np.float64) - truth) ** 2))
        assert abs(r["referee_rmse_golden"] - want_g) <= 1e-6 * want_g, r
        assert abs(r["referee_rmse_mine"] - want_m) <= 1e-6 * want_m, r
    assert rows["better"]["judged_by"] == "fp16 truth ratio", rows["better"]["judged_by"]
    assert three.rc == 1


def test_preset_tolerances_drive_allclose_and_verdict(diagnose_bin, tmp_path):
    rng = np.random.default_rng(4)
    g = rng.standard_normal(1000).astype(np.float32)
    m = g + np.float32(1e-3) * rng.standard_normal(1000).astype(np.float32)
    (tmp_path / "g").mkdir()
    (tmp_path / "m").mkdir()
    np.save(tmp_path / "g" / "x.npy", g)
    np.save(tmp_path / "m" / "x.npy", m)
    loose = run_compare(
        diagnose_bin,
        tmp_path / "g",
        tmp_path / "m",
        tmp_path / "o1",
        "--preset",
        "fp32",
        "--tol",
        "fp32.atol=1e-2",
        "--tol",
        "fp32.rtol=0",
    )
    tight = run_compare(
        diagnose_bin,
        tmp_path / "g",
        tmp_path / "m",
        tmp_path / "o2",
        "--preset",
        "fp32",
        "--tol",
        "fp32.atol=1e-4",
        "--tol",
        "fp32.rtol=0",
        "--tol",
        "fp32.min_cosine=1.0",
        "--tol",
        "fp32.max_relative_l2=0",
    )
    (lr,), (tr,) = loose.rows(), tight.rows()
    g64, m64 = g.astype(np.float64), m.astype(np.float64)
    assert lr["allclose_violations"] == int(np.count_nonzero(np.abs(m64 - g64) > 1e-2))
    assert tr["allclose_violations"] == int(np.count_nonzero(np.abs(m64 - g64) > 1e-4))
    assert lr["verdict"] == "pass" and loose.rc == 0, loose.describe()
    assert tr["verdict"] == "fail" and tight.rc == 1, tight.describe()
    (tmp_path / "tol.json").write_text('{"fp32": {"atol": 1e-2, "rtol": 0}}')
    via_file = run_compare(
        diagnose_bin,
        tmp_path / "g",
        tmp_path / "m",
        tmp_path / "o3",
        "--preset",
        "fp32",
        "--tolerances",
        tmp_path / "tol.json",
    )
    assert via_file.rows()[0]["allclose_violations"] == lr["allclose_violations"]


def test_referee_with_manifest_dumps(diagnose_bin, tmp_path):
    """A float64 referee manifest under the same keys: referee RMSE columns from the fp64
    values; the planted error is not excused by the referee."""
    golden_ops = make_chain(n_ops=4, planted=None, seed=5)
    mine_ops = make_chain(n_ops=4, planted=2, seed=5)
    ref_ops = make_chain(n_ops=4, planted=None, seed=5, dtype="fp64")
    write_chain_manifests(tmp_path / "g", tmp_path / "unused", golden_ops)
    write_chain_manifests(tmp_path / "unused2", tmp_path / "m", mine_ops)
    write_chain_manifests(tmp_path / "ref", tmp_path / "unused3", ref_ops, dtype="fp64")
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out", "--referee", tmp_path / "ref")
    assert run.result is not None and run.result["referee"] is not None, run.describe()
    rows = {(r["op_key"], r["io"]): r for r in run.rows()}
    problems = []
    for g_op, m_op, r_op in zip(golden_ops, mine_ops, ref_ops):
        for io in ("input", "output"):
            row = rows[(g_op.op_key, io)]
            ref = getattr(r_op, f"golden_{'in' if io == 'input' else 'out'}")
            g = getattr(g_op, f"golden_{'in' if io == 'input' else 'out'}")
            m = getattr(m_op, f"mine_{'in' if io == 'input' else 'out'}")
            for col, vals in (("referee_rmse_golden", g), ("referee_rmse_mine", m)):
                want = float(np.sqrt(np.mean((vals - ref) ** 2)))
                if row[col] is None or abs(row[col] - want) > 1e-6 * max(want, 1e-30):
                    problems.append(f"{g_op.op_key} {io} {col}: got {row[col]}, want {want}")
    assert not problems, "\n".join(problems)
    assert rows[(mine_ops[2].op_key, "output")]["verdict"] == "fail"
    assert rows[(mine_ops[0].op_key, "output")]["verdict"] == "pass"


@pytest.mark.parametrize("golden_has_file", [True, False])
def test_statistics_only_records(diagnose_bin, tmp_path, golden_has_file):
    """docs/dump-format.md: "a pair where either side has `stats` only is compared on
    statistics (reported as such)". Mine is statistics-only; golden has the tensor (with its
    stats) or statistics only too."""
    from fixtures.manifest_dump import ManifestDump, ManifestRecord

    rng = np.random.default_rng(12)
    same = rng.standard_normal((8, 8)).astype(np.float32)
    shifted = same + np.float32(3.0)
    g, m = ManifestDump(tmp_path / "g"), ManifestDump(tmp_path / "m")
    for seq, (key, mine) in enumerate((("same-aten.x.default", same), ("shifted-aten.x.default", shifted))):
        g.add(ManifestRecord(seq, key, "output", 0, same, "torch.float32", with_file=golden_has_file))
        m.add(ManifestRecord(seq, key, "output", 0, mine, "torch.float32", with_file=False))
    g.write()
    m.write()
    run = run_compare(diagnose_bin, tmp_path / "g", tmp_path / "m", tmp_path / "out")
    assert run.result is not None, run.describe()
    rows = {r["op_key"]: r for r in run.rows()}
    problems = []
    for key, want in (("same-aten.x.default", "pass"), ("shifted-aten.x.default", "fail")):
        r = rows[key]
        said = (r["judged_by"] or "") + " " + r["cmp_fail_reason"] + " " + " ".join(r["reasons"])
        if "statistic" not in said.lower() or r["verdict"] != want:
            problems.append(
                f"{key}: verdict {r['verdict']} (want {want}), judged_by {r['judged_by']!r}, "
                f"reason {r['cmp_fail_reason']!r}"
            )
    assert not problems, "\n".join(problems)
    assert rows["shifted-aten.x.default"]["my_mean_value"] == pytest.approx(float(shifted.astype(np.float64).mean()))
    assert run.rc == 1, run.describe()
