"""A fused GE op that folded a scalar operand of its first FX node (`mul(x, 2.0)` fused with
`relu`): the GE op has one input, the FX node two, one of them a 0-d scalar. The scalar is left
out of the pairing and listed with its reason; the tensor inputs are compared (msit zipped them by
position and dropped the scalar silently)."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.compare_cli import read_csv, run_compare
from fixtures.fx_dump import write_fx_tensor
from fixtures.ge_dump import GeOp, GeTensor, ge_file_name, write_ge_dump
from fixtures.graph_txt import GraphOp, write_graph_txt

FX_TS = 20240125031118787351


@pytest.fixture(scope="module")
def fused_run(diagnose_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("fused_inputs")
    x = np.array([-1.0, 0.5, 2.0, 3.0], dtype=np.float32)
    scaled = x * 2
    out = np.maximum(scaled, 0)
    ops = [
        GraphOp("arg0_1", "Data", output_descs=[("fp32", (4,), "ND", None)]),
        GraphOp("Mul_1", "Mul", ["arg0_1:0"], output_descs=[("fp32", (4,), "ND", "mul-aten.mul.Tensor.OUTPUT.0")]),
        GraphOp("Relu_2", "Relu", ["Mul_1:0"], output_descs=[("fp32", (4,), "ND", "relu-aten.relu.default.OUTPUT.0")]),
    ]
    ge = root / "ge"
    write_graph_txt(ge / "dynamo_original_graph_1_rank_0_pid_9_ts_20240101000000000000.txt", "graph", ops)
    fused = GeOp("AutomaticBufferFusionOp", "Mul_1Relu_2", [GeTensor(x)], [GeTensor(out * 1.001)])
    write_ge_dump(ge / "worldsize1_global_rank0" / "20240101010101" / "0" / "graph_1" / "1" / "0", fused)
    step = root / "fx" / "worldsize1_global_rank0" / "graph_1" / "0"
    write_fx_tensor(step, "mul-aten.mul.Tensor", "INPUT", 0, FX_TS, x)
    write_fx_tensor(step, "mul-aten.mul.Tensor", "INPUT", 1, FX_TS, np.array(2.0, dtype=np.float32))
    write_fx_tensor(step, "mul-aten.mul.Tensor", "OUTPUT", 0, FX_TS, scaled)
    write_fx_tensor(step, "relu-aten.relu.default", "INPUT", 0, FX_TS, scaled)
    write_fx_tensor(step, "relu-aten.relu.default", "OUTPUT", 0, FX_TS, out)
    run = run_compare(diagnose_bin, root / "fx", ge, root / "out")
    assert run.result is not None, run.describe()
    return run, ge_file_name(fused)


def _csv_rows(run):
    (csv_file,) = run.csv_files
    header, rows = read_csv(csv_file)
    assert header[23] == "cmp_fail_reason"
    return rows


def test_the_tensor_input_is_compared(fused_run):
    run, ge_file = fused_run
    rows = _csv_rows(run)
    (first,) = [r for r in rows if r["my_data_path"].endswith(f"{ge_file},inputs,0")]
    assert first["golden_data_path"].endswith(f"mul-aten.mul.Tensor.INPUT.0.{FX_TS}.npy")
    assert float(first["cosine_similarity"]) == 1.0
    assert float(first["max_absolute_error"]) == 0.0
    assert first["cmp_fail_reason"] == ""
    (row,) = [r for r in run.rows() if r["my_data_path"].endswith(",inputs,0")]
    assert row["verdict"] == "pass", row


def test_the_folded_scalar_is_listed_with_its_reason(fused_run):
    run, _ = fused_run
    assert not [r for r in _csv_rows(run) if r["golden_data_path"].endswith(f"INPUT.1.{FX_TS}.npy")]
    (scalar,) = [u for u in run.result["summary"]["unmatched"] if u["name"].endswith("mul-aten.mul.Tensor.INPUT.1")]
    assert scalar["reason"] == "FX scalar argument, folded into GE op Mul_1Relu_2 (an attribute there)"
