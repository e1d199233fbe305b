"""GE dump against GE dump: fusion off (golden) vs fusion on (mine), matched by GE op name;
a fused AutomaticBufferFusionOp is compared through its constituents."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.compare_cli import check_metrics, path_parts, run_compare
from fixtures.ge_dump import ge_file_name
from fixtures.scenarios import llm_block_graph
from fixtures.torchair import GraphRecorder, RunLayout, write_graph_run


class _Unfused(GraphRecorder):
    def fuse(self, ge_names, original_op_names=None):  # fusion off: keep the ops separate
        return None


@pytest.fixture(scope="module")
def ge_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("gevsge")
    golden = _Unfused(0, 0, dtype="fp16", seed=7)
    llm_block_graph(golden)
    mine = GraphRecorder(0, 0, dtype="fp16", seed=7, planted={"Relu_1": 0.5})
    llm_block_graph(mine)
    write_graph_run(root / "unused_fx_g", root / "golden", [golden], 0, RunLayout())
    write_graph_run(root / "unused_fx_m", root / "mine", [mine], 0, RunLayout())
    return root, golden, mine


@pytest.fixture(scope="module")
def ge_run(diagnose_bin, ge_pair, tmp_path_factory):
    root, _, _ = ge_pair
    return run_compare(diagnose_bin, root / "golden", root / "mine", tmp_path_factory.mktemp("gevsge_out"))


def _expected(golden: GraphRecorder, mine: GraphRecorder):
    """(my file, io, index) -> (golden file, golden exact values, mine exact values)."""
    by_name = {o.op_name: o for o in golden.ge_ops}
    out = {}
    for op in mine.ge_ops:
        my_file = ge_file_name(op)
        if op.op_type == "AutomaticBufferFusionOp":
            first, last = by_name["Add_1"], by_name["Relu_1"]
            # Add_1's inputs come from outside the group; the outputs are Relu_1's.
            for i, t in enumerate(op.inputs):
                out[(my_file, "input", i)] = (ge_file_name(first), first.inputs[i], t)
            for k, t in enumerate(op.outputs):
                out[(my_file, "output", k)] = (ge_file_name(last), last.outputs[k], t)
            continue
        g = by_name[op.op_name]
        for i, t in enumerate(op.inputs):
            out[(my_file, "input", i)] = (ge_file_name(g), g.inputs[i], t)
        for k, t in enumerate(op.outputs):
            out[(my_file, "output", k)] = (ge_file_name(g), g.outputs[k], t)
    return out


def test_kinds(ge_run):
    assert ge_run.result is not None, ge_run.describe()
    assert ge_run.result["golden"]["kind"] == "ge_dump" and ge_run.result["mine"]["kind"] == "ge_dump"


def test_rows_metrics_and_fused_op(ge_run, ge_pair):
    _, golden, mine = ge_pair
    expected = _expected(golden, mine)
    rows = {}
    for row in ge_run.rows():
        my_file, io, index = path_parts(row["my_data_path"])
        rows[(my_file, io, index)] = row
    problems = []
    for key, (g_file, g_t, m_t) in expected.items():
        row = rows.get(key)
        if row is None:
            problems.append(f"missing row {key}")
            continue
        if path_parts(row["golden_data_path"])[0] != g_file:
            problems.append(f"{key}: golden {row['golden_data_path']} != {g_file}")
        problems += [f"{key}: {e}" for e in check_metrics(row, g_t.exact_logical(), m_t.exact_logical())]
    assert not problems, "\n".join(problems[:40])


def test_fused_output_fails_and_is_the_source(ge_run):
    assert ge_run.rc == 1, ge_run.describe()
    fused = [r for r in ge_run.rows() if "AutomaticBufferFusionOp" in r["my_data_path"]]
    assert {path_parts(r["my_data_path"])[1] for r in fused} == {"input", "output"}
    for r in fused:
        io = path_parts(r["my_data_path"])[1]
        assert r["verdict"] == ("pass" if io == "input" else "fail"), r
    before = [r for r in ge_run.rows() if any(f".{n}." in r["my_data_path"] for n in ("MatMulV2", "Add", "Relu"))]
    assert before and all(r["verdict"] == "pass" for r in before)
    div = ge_run.result["summary"]["divergences"]
    assert div and "Add_1Relu_1" in div[0]["first_failing_op"] + " ".join(div[0]["source_ops"]), div
    assert np.isfinite(fused[0]["cosine_similarity"])
