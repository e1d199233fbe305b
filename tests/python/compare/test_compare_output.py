"""The output contract (docs/compare-output.md): CSV header and formatting, JSON structure,
file naming without overwrite, exit codes, and msit's small worked vectors."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from fixtures.compare_cli import METRIC_NAMES, json_number, read_csv, run_compare

MSIT_COLUMNS = (
    "token_id,data_id,golden_data_path,golden_op_type,golden_dtype,golden_shape,"
    "golden_max_value,golden_min_value,golden_mean_value,my_data_path,my_op_type,my_dtype,"
    "my_shape,my_max_value,my_min_value,my_mean_value,cosine_similarity,max_relative_error,"
    "mean_relative_error,max_absolute_error,mean_absolute_error,kl_divergence,"
    "relative_euclidean_distance,cmp_fail_reason"
)
EXTRA_COLUMNS = (
    "verdict,judged_by,op_key,io,index,elements,shape_mismatch,rmse,max_ulp_error,"
    "mean_ulp_error,snr_db,allclose_violations,golden_nan_count,golden_inf_count,"
    "my_nan_count,my_inf_count,referee_rmse_golden,referee_rmse_mine,truth_bound"
)
ROW_EXTRA_JSON = {"reasons", "cosine_unrounded", "shape_mismatch", "graph_step"}


def _npy_pair(tmp_path, pairs: dict):
    g, m = tmp_path / "golden", tmp_path / "mine"
    g.mkdir(parents=True, exist_ok=True)
    m.mkdir(parents=True, exist_ok=True)
    for name, (gv, mv) in pairs.items():
        np.save(g / f"{name}.npy", np.asarray(gv))
        np.save(m / f"{name}.npy", np.asarray(mv))
    return g, m


@pytest.fixture(scope="module")
def basic_run(diagnose_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("basic")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    pairs = {
        "a_identical": (x, x),
        "b_scaled": (np.array([1, 2, 3], np.float32), np.array([2, 4, 6], np.float32)),
        "c_ones": (np.ones(6, np.float32), 10 * np.ones(6, np.float32)),
        'd,with comma "quoted"': (x, x * 1.5),
        "e_nan": (np.array([1.0, np.nan, 2.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)),
        "f_inf_mine": (np.array([1.0, 2.0], np.float32), np.array([np.inf, 2.0], np.float32)),
        "g_both_zero": (np.zeros(4, np.float32), np.zeros(4, np.float32)),
        "h_one_zero": (np.zeros(4, np.float32), np.ones(4, np.float32)),
        "i_tiny_golden": (np.array([1e-8, 1.0], np.float32), np.array([5e-8, 1.0], np.float32)),
    }
    g, m = _npy_pair(root, pairs)
    run = run_compare(diagnose_bin, g, m, root / "out", "--json", root / "explicit.json")
    return run, root


def _row(run, name):
    return next(r for r in run.rows() if os.path.basename(r["golden_data_path"]).startswith(name))


def test_npy_directory_kind_and_exit_code(basic_run):
    run, _ = basic_run
    assert run.result is not None, run.describe()
    assert run.result["golden"]["kind"] == "npy_directory" and run.result["mine"]["kind"] == "npy_directory"
    assert run.rc == 1 and run.result["exit_code"] == 1


def test_csv_header_byte_for_byte(basic_run):
    run, _ = basic_run
    assert len(run.csv_files) == 1, run.csv_files
    first_line = run.csv_files[0].read_bytes().split(b"\n", 1)[0].rstrip(b"\r")
    assert first_line == (MSIT_COLUMNS + "," + EXTRA_COLUMNS).encode()


def test_csv_file_name(basic_run):
    run, _ = basic_run
    name = run.csv_files[0].name
    assert name.startswith("diagnose_cmp_report_") and name.endswith(".csv")
    stamp = name[len("diagnose_cmp_report_") : -4].split("_")[-1]
    assert len(stamp) == 14 and stamp.isdigit(), name


def test_worked_vectors(basic_run):
    run, _ = basic_run
    r = _row(run, "b_scaled")
    assert (r["max_relative_error"], r["mean_relative_error"], r["max_absolute_error"]) == (1.0, 1.0, 3.0)
    assert r["cosine_similarity"] == 1.0
    assert _row(run, "c_ones")["relative_euclidean_distance"] == 9.0
    assert _row(run, "g_both_zero")["cosine_similarity"] == 1.0
    assert _row(run, "h_one_zero")["cosine_similarity"] == 0.0
    tiny = _row(run, "i_tiny_golden")  # |g| <= eps is masked out of relative and absolute errors
    assert tiny["max_relative_error"] == 0.0 and tiny["max_absolute_error"] == 0.0
    assert _row(run, "a_identical")["verdict"] == "pass"


def test_precheck_reasons_and_stats_still_written(basic_run):
    run, _ = basic_run
    nan_row = _row(run, "e_nan")
    assert nan_row["cmp_fail_reason"].startswith("golden_data includes NAN or inf."), nan_row
    # NaN judged by position: where, and what the target holds there
    assert "golden NaN at 1 of 3 elements, target finite there (first at [1])" in nan_row["cmp_fail_reason"]
    assert nan_row["verdict"] == "fail"
    assert nan_row["cosine_similarity"] is None and nan_row["kl_divergence"] is None
    assert nan_row["golden_nan_count"] == 1 and nan_row["my_nan_count"] == 0
    assert nan_row["my_max_value"] == 3.0 and nan_row["my_min_value"] == 1.0
    inf_row = _row(run, "f_inf_mine")
    assert inf_row["cmp_fail_reason"].startswith("my_data includes NAN or inf."), inf_row
    assert "target +Inf at 1 of 2 elements, golden finite there (first at [0])" in inf_row["cmp_fail_reason"]
    assert inf_row["my_inf_count"] == 1 and inf_row["max_absolute_error"] is None
    assert inf_row["my_max_value"] == "inf"
    assert inf_row["verdict"] != "pass"


def test_csv_cells_match_json_and_use_python_repr(basic_run):
    run, _ = basic_run
    _, csv_rows = read_csv(run.csv_files[0])
    json_rows = run.rows()
    assert len(csv_rows) == len(json_rows)
    numeric = [f"{side}_{stat}_value" for side in ("golden", "my") for stat in ("max", "min", "mean")]
    numeric += ["cosine_similarity", *METRIC_NAMES, "snr_db"]
    for c, j in zip(csv_rows, json_rows):
        assert c["golden_data_path"] == j["golden_data_path"]
        assert c["data_id"] == str(j["data_id"]) and c["token_id"] == str(j["token_id"])
        assert c["golden_shape"] == "[" + ", ".join(map(str, j["golden_shape"])) + "]"
        assert c["cmp_fail_reason"] == j["cmp_fail_reason"]
        for col in numeric:
            want = "" if j[col] is None else repr(float(json_number(j[col])))
            assert c[col] == want, f"{col}: csv {c[col]!r} vs repr(json) {want!r}"
    assert [j["data_id"] for j in json_rows] == sorted(j["data_id"] for j in json_rows)


def test_rfc4180_quoting(basic_run):
    run, _ = basic_run
    text = run.csv_files[0].read_text()
    assert '"d,with comma ""quoted"""' in text or 'with comma ""quoted"".npy"' in text


def test_json_structure(basic_run):
    run, root = basic_run
    res = run.result
    assert set(res) >= {"format", "version", "golden", "mine", "referee", "summary", "groups", "exit_code"}
    assert res["referee"] is None
    for side in ("golden", "mine"):
        assert set(res[side]) >= {"path", "kind", "detail"}
    s = res["summary"]
    assert set(s) >= {"rows", "compared", "passed", "failed", "not_comparable", "divergences", "unmatched", "warnings"}
    rows = run.rows()
    assert s["rows"] == len(rows)
    verdicts = [r["verdict"] for r in rows]
    assert s["passed"] == verdicts.count("pass") and s["failed"] == verdicts.count("fail")
    assert s["not_comparable"] == verdicts.count("not_comparable")
    assert s["compared"] == s["passed"] + s["failed"]
    columns = (MSIT_COLUMNS + "," + EXTRA_COLUMNS).split(",")
    for r in rows:
        assert set(r) >= set(columns) | ROW_EXTRA_JSON, set(columns) - set(r)
        assert isinstance(r["golden_shape"], list) and isinstance(r["reasons"], list)
        assert isinstance(r["shape_mismatch"], bool) and isinstance(r["cmp_fail_reason"], str)
        assert r["verdict"] in ("pass", "fail", "not_comparable")
    for g in res["groups"]:
        assert set(g) >= {"rank", "graph", "csv", "rows"}
    explicit = json.loads((root / "explicit.json").read_text())
    assert explicit["summary"] == s and explicit["groups"] == res["groups"]


def test_second_run_never_overwrites(diagnose_bin, tmp_path):
    g, m = _npy_pair(tmp_path, {"x": (np.ones(3, np.float32), np.ones(3, np.float32))})
    out = tmp_path / "out"
    out.mkdir()
    # Occupy the names of the next few seconds so a collision is certain.
    now = datetime.now(timezone.utc)
    sentinels = {}
    for s in range(0, 4):
        stamp = (now + timedelta(seconds=s)).strftime("%Y%m%d%H%M%S")
        for name in (f"diagnose_cmp_report_{stamp}.csv", f"diagnose_cmp_result_{stamp}.json"):
            (out / name).write_text(f"sentinel {name}")
            sentinels[name] = f"sentinel {name}"
    first = run_compare(diagnose_bin, g, m, out)
    second = run_compare(diagnose_bin, g, m, out)
    assert first.rc == 0 and second.rc == 0, first.describe() + second.describe()
    for name, text in sentinels.items():
        assert (out / name).read_text() == text, f"{name} overwritten"
    assert len(first.csv_files) == 1 and len(second.csv_files) == 1
    assert first.csv_files[0] != second.csv_files[0]
    assert first.result is not None and second.result is not None
    stems = [p.stem for p in first.csv_files + second.csv_files]
    assert any(s.rsplit("_", 1)[-1].isdigit() and len(s.rsplit("_", 1)[-1]) < 14 for s in stems), stems


def test_exit_code_0_all_pass(diagnose_bin, tmp_path):
    x = np.arange(10, dtype=np.float32)
    g, m = _npy_pair(tmp_path, {"x": (x, x), "y": (x * 2, x * 2)})
    run = run_compare(diagnose_bin, g, m, tmp_path / "out")
    assert run.rc == 0 and run.result["exit_code"] == 0, run.describe()


@pytest.mark.parametrize(
    "args",
    [
        ["-mp", "MINE", "-o", "OUT"],  # no golden
        ["-gp", "GOLDEN", "-mp", "MINE", "--no-such-flag"],
        ["-gp", "GOLDEN", "-mp", "MINE", "--tol", "fp16.rtol"],
        ["-gp", "GOLDEN", "-mp", "MINE", "--tol", "nosuchpreset.rtol=1"],
        ["-gp", "GOLDEN", "-mp", "MINE", "--threads", "many"],
    ],
)
def test_exit_code_2_usage(diagnose_bin, tmp_path, args):
    g, m = _npy_pair(tmp_path, {"x": (np.ones(2, np.float32), np.ones(2, np.float32))})
    subst = {"GOLDEN": str(g), "MINE": str(m), "OUT": str(tmp_path / "out")}
    run = run_compare(diagnose_bin, None, None, None, *[subst.get(a, a) for a in args])
    assert run.rc == 2, run.describe()
    assert run.stderr.strip(), "a usage error says why on stderr"


def test_exit_code_3_unreadable_inputs(diagnose_bin, tmp_path):
    run = run_compare(diagnose_bin, tmp_path / "does-not-exist", tmp_path / "neither", tmp_path / "out")
    assert run.rc == 3, run.describe()
    empty_g, empty_m = tmp_path / "eg", tmp_path / "em"
    empty_g.mkdir()
    empty_m.mkdir()
    run = run_compare(diagnose_bin, empty_g, empty_m, tmp_path / "out2")
    assert run.rc == 3, run.describe()


def test_npy_file_vs_npy_file(diagnose_bin, tmp_path):
    a = tmp_path / "a.npy"
    b = tmp_path / "b.npy"
    np.save(a, np.array([1, 2, 3], np.float32))
    np.save(b, np.array([2, 4, 6], np.float16))
    run = run_compare(diagnose_bin, a, b, tmp_path / "out")
    assert run.result["golden"]["kind"] == "npy_file" and run.result["mine"]["kind"] == "npy_file"
    (row,) = run.rows()
    assert row["golden_dtype"] == "torch.float32" and row["my_dtype"] == "torch.float16"
    assert row["max_absolute_error"] == 3.0 and row["relative_euclidean_distance"] == 1.0


def test_quiet_prints_nothing_on_success(diagnose_bin, tmp_path):
    x = np.arange(4, dtype=np.float32)
    g, m = _npy_pair(tmp_path, {"x": (x, x)})
    run = run_compare(diagnose_bin, g, m, tmp_path / "out", "--quiet")
    assert run.rc == 0 and run.stdout == "", run.describe()
    assert run.result is not None, "--quiet still writes the results"


def test_output_path_that_is_a_file(diagnose_bin, tmp_path):
    x = np.arange(4, dtype=np.float32)
    g, m = _npy_pair(tmp_path, {"x": (x, x)})
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the output directory should go")
    run = run_compare(diagnose_bin, g, m, blocker)
    assert run.rc in (2, 3), run.describe()
    assert run.stderr.strip()
    assert blocker.read_text().startswith("a file")
