"""What the single-op check costs and reports about its cost: calls of an op with the same
signature (non-tensor arguments, input shapes, dtypes, strides) share one compile of their
one-op graph and are still each run and judged; every op's result carries its compile and
run seconds."""

from __future__ import annotations

import json

from conftest import ok_run, single_op_check, uses

GELU = "aten.gelu.default"  # examples/mlp: after the first and the second Linear, both (batch, 64)
ADDMM = "aten.addmm.default"  # 32 -> 64, 64 -> 64 and 64 -> 10: three signatures, each checked


@uses("mlp/eager")
def test_calls_with_one_signature_share_a_compile_and_are_each_judged(plugin_runs, cache_dir, tmp_path):
    eager = ok_run(plugin_runs, "mlp/eager")
    out = tmp_path / "single"
    # each op compiled alone (--batch-graphs 0): a batched compile would settle addmm
    single_op_check(eager, [GELU, ADDMM], out, cache_dir, "--max-calls-per-signature", "2", "--batch-graphs", "0")
    ops = {o["op"]: o for o in json.loads((out / "single_op.json").read_text())["ops"]}
    gelu, addmm = ops[GELU], ops[ADDMM]
    assert (gelu["status"], gelu["calls"], gelu["compiles"]) == ("ok", 2, 1), gelu
    first, second = gelu["op_keys"]
    assert gelu["shared_compiles"] == [{"op_key": second, "compiled_as": first}]
    assert (addmm["status"], addmm["calls"], addmm["compiles"], addmm["shared_compiles"]) == ("ok", 3, 3, []), addmm
    for result in (gelu, addmm):
        assert isinstance(result["compile_s"], float) and isinstance(result["run_s"], float), result
    # both gelu calls are written and compared, each under its own op_key
    records = [json.loads(line) for line in (out / "graph" / "manifest.jsonl").read_text().splitlines()]
    assert {r["op_key"] for r in records if r.get("op") == GELU} == {first, second}


def test_one_op_graphs_are_compiled_together_only_where_nothing_combines_independent_ops():
    from diagnose_pytorch.checks.single_op import _batch_faithful
    from diagnose_pytorch.spec import Switches

    assert _batch_faithful("inductor", Switches(inductor={"max_autotune": False}))
    assert not _batch_faithful("inductor", Switches(inductor={"aggressive_fusion": True}))
    assert not _batch_faithful("inductor", Switches(inductor={"pre_grad_fusion_options": {"batch_linear": {}}}))
    assert not _batch_faithful("inductor", Switches(inductor={"combo_kernels": True}))
    assert not _batch_faithful("torchair", Switches())  # GE's fusion rules are not known to keep ops apart
