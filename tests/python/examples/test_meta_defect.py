"""examples/meta_defect and the meta check: the custom op whose fake implementation gives the
wrong dtype is named; real ATen ops pass; data-dependent ops are skipped, not failed."""

import json

import pytest
import torch

from diagnose_pytorch.checks.meta_check import MetaChecker, compare_outputs
from diagnose_pytorch.spec import RunSpec, SpecError
from example_runs import example_cache, example_runs, needs  # noqa: F401


@needs("meta/eager-meta")
def test_meta_check_names_the_custom_op_with_the_wrong_fake_dtype(example_runs):
    run = example_runs.get("meta/eager-meta")
    entries = json.loads((run.run_dir / "meta_check.json").read_text())["ops"]
    assert [e["op"] for e in entries] == [
        "aten.t.default",
        "aten.addmm.default",
        "aten.relu.default",
        "diagnose_example.rms_scale.default",
        "aten.mul.Tensor",
        "aten.add.Tensor",
    ]
    failing = [e for e in entries if e["status"] != "ok"]
    assert failing == [
        {
            "op": "diagnose_example.rms_scale.default",
            "op_key": "diagnose_example.rms_scale.default#0",
            "status": "mismatch",
            "mismatches": [{"output": 0, "field": "dtype", "eager": "torch.float32", "fake": "torch.bfloat16"}],
            "message": "output 0 dtype: eager torch.float32, fake torch.bfloat16",
            # a custom op is checked against its schema too: it keeps to it
            "schema": "diagnose_example::rms_scale(Tensor x, Tensor weight) -> Tensor",
            "violations": [],
        }
    ]
    assert run.status["graphs"]["graph_break_reasons"] == []


def test_data_dependent_op_is_skipped_and_a_raising_fake_is_an_error(tmp_path):
    checker = MetaChecker(tmp_path / "meta_check.json")
    x = torch.tensor([0.0, 1.0, 0.0, 2.0])
    for func, args in (
        (torch.ops.aten.nonzero.default, (x,)),
        (torch.ops.aten.mm.default, (x.reshape(2, 2), torch.ones(3, 3))),
    ):
        fake = checker.fake_run(func, args, {})
        try:
            real = func(*args)
        except RuntimeError:
            real = None
        checker.record(str(func), f"{func}#0", fake, real)
    checker.save()
    entries = {e["op"]: e for e in json.loads((tmp_path / "meta_check.json").read_text())["ops"]}
    assert entries["aten.nonzero.default"]["status"] == "skipped"
    assert "needs the data" in entries["aten.nonzero.default"]["message"]
    assert entries["aten.mm.default"]["status"] == "error"


def test_stride_compared_only_for_dense_outputs():
    real = torch.empty(4, 6).t()
    assert compare_outputs(real, torch.empty(6, 4)) == [
        {"output": 0, "field": "stride", "eager": [1, 6], "fake": [4, 1]}
    ]
    overlapping = torch.empty(4, 1).expand(4, 6)
    assert compare_outputs(overlapping, torch.empty(4, 6)) == []


def test_only_significant_strides_are_compared():
    # batch 1 and one query token: the strides of size-1 dimensions address no element
    one_token = torch.empty_strided((1, 1, 8, 32), (32, 1, 32, 1))
    assert compare_outputs(one_token, torch.empty(1, 1, 8, 32)) == []
    assert (
        compare_outputs(torch.empty_strided((1, 1, 32), (32, 1, 1)), torch.empty_strided((1, 1, 32), (256, 1, 1))) == []
    )
    assert compare_outputs(torch.empty(0, 4), torch.empty(4, 0).t()) == []
    # a dimension of size 2 still counts, beside size-1 ones
    transposed = torch.empty(1, 3, 2).transpose(1, 2)
    assert compare_outputs(transposed, torch.empty(1, 2, 3)) == [
        {"output": 0, "field": "stride", "eager": [6, 1, 2], "fake": [6, 3, 1]}
    ]
    assert compare_outputs(torch.empty(1, 1, 5), torch.empty(1, 2, 5)[:, :1]) == []


def test_meta_check_needs_eager_aten_runs():
    with pytest.raises(SpecError, match="checks.meta"):
        RunSpec.from_dict({"output_dir": "x", "mode": "compiled", "checks": {"meta": True}})
    with pytest.raises(SpecError, match="unknown key"):
        RunSpec.from_dict({"output_dir": "x", "mode": "eager", "checks": {"fake": True}})
