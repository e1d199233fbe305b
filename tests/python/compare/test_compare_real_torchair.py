"""`diagnose compare` on a dump set the real torchair wrote (over the CANN stand-in, with its
fusion rules on): a Llama-style decoder layer's FX npy dump against its GE dump and graph txt.
The real converters lower one FX node to several GE ops, leave helper ops unlinked, write ""
for unused optional inputs and number graphs from 1; every row must still be comparable, and
every op or node left out must say why."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fixtures import real_torchair
from fixtures.compare_cli import read_csv, run_compare

HERE = __import__("pathlib").Path(__file__).resolve().parent
MSIT_COLUMNS = (
    "token_id,data_id,golden_data_path,golden_op_type,golden_dtype,golden_shape,golden_max_value,golden_min_value,"
    "golden_mean_value,my_data_path,my_op_type,my_dtype,my_shape,my_max_value,my_min_value,my_mean_value,"
    "cosine_similarity,max_relative_error,mean_relative_error,max_absolute_error,mean_absolute_error,"
    "kl_divergence,relative_euclidean_distance,cmp_fail_reason"
).split(",")


@pytest.fixture(scope="module")
def llama_compare(diagnose_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("real_torchair")
    env = {"PYTHONPATH": ":".join([*real_torchair.pythonpath(), str(real_torchair.REPO / "plugins" / "pytorch")])}
    env["OMP_NUM_THREADS"] = "1"
    made = subprocess.run(
        [sys.executable, str(HERE / "scripts" / "torchair_llama_dumps.py"), str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert made.returncode == 0, made.stderr[-3000:]
    run = run_compare(diagnose_bin, root / "fx_dump", root / "ge_dump", root / "out")
    assert run.result is not None, run.describe()
    return run


def test_every_row_of_a_real_torchair_dump_set_is_comparable(llama_compare):
    run = llama_compare
    rows = run.rows()
    assert len(rows) >= 30, run.describe()
    assert all(r["verdict"] != "not_comparable" for r in rows), [r for r in rows if r["verdict"] == "not_comparable"]
    assert all(r["verdict"] == "pass" for r in rows), [r for r in rows if r["verdict"] != "pass"][:3]
    unmatched = run.result["summary"]["unmatched"]
    assert all(u["reason"] for u in unmatched)
    outputs = {r["op_key"].split("-", 1)[1] for r in rows if ",outputs," in r["my_data_path"]}
    expected = {"aten.mm.default", "aten.bmm.default", "aten.cat.default", "aten.native_layer_norm.default"}
    assert expected <= outputs, outputs
    assert any(",inputs," in r["my_data_path"] for r in rows)


def test_the_msit_columns_stay_exact(llama_compare):
    (csv_file,) = llama_compare.csv_files
    header, _ = read_csv(csv_file)
    assert header[:24] == MSIT_COLUMNS
