"""What the dumps say about the numbers: an eager run is reproducible op by op, dumping keeps
Inductor's fusion (bitwise equal outputs), Inductor fp32 agrees with eager at fp32
tolerances, and Inductor bf16 shows the small real differences of fused bf16 arithmetic,
with every compiled buffer mapped to FX nodes."""

import numpy as np
import pytest

from conftest import EXAMPLES, ok_run, uses

FP32 = dict(rtol=1e-4, atol=1e-5)


def paired(golden, mine):
    """(golden record, my record) for each tensor identity present in both dumps."""
    mine_by_key = mine.by_key()
    return [(g, mine_by_key[k]) for k, g in golden.by_key().items() if k in mine_by_key]


@uses("mlp/eager", "mlp/eager-again")
def test_eager_dump_reproduces_exactly_in_a_fresh_process(plugin_runs):
    first = ok_run(plugin_runs, "mlp/eager").dump
    second = ok_run(plugin_runs, "mlp/eager-again").dump
    assert list(first.by_key()) == list(second.by_key())
    for a, b in paired(first, second):
        assert a["stats"]["hash"] == b["stats"]["hash"], a["op_key"]
        np.testing.assert_array_equal(first.load(a), second.load(b))


@pytest.mark.parametrize(
    "ex",
    [
        pytest.param("mlp", marks=uses("mlp/inductor", "mlp/inductor-nodump")),
        pytest.param(
            "transformer_block", marks=uses("transformer_block/inductor", "transformer_block/inductor-nodump")
        ),
    ],
)
def test_dumping_keeps_inductor_fusion_bitwise(plugin_runs, ex):
    dumped = ok_run(plugin_runs, f"{ex}/inductor")
    plain = ok_run(plugin_runs, f"{ex}/inductor-nodump")
    assert dumped.status["inductor_buffers"]["0"] > 0
    assert not (plain.run_dir / "dump").exists()
    pairs = paired(plain.outputs, dumped.outputs)
    assert pairs
    for a, b in pairs:
        np.testing.assert_array_equal(plain.outputs.load(a), dumped.outputs.load(b))
    # fusion really happened: some buffer stands for several FX nodes
    assert any(len(r["fx_nodes"]) > 1 for r in dumped.dump.ops())


@pytest.mark.parametrize(
    "ex",
    [
        pytest.param(ex, marks=uses(f"{ex}/eager", f"{ex}/inductor", f"{ex}/aot_eager_decomp_partition"))
        for ex in EXAMPLES
    ],
)
def test_eager_vs_inductor_fp32_within_fp32_tolerance(plugin_runs, ex):
    eager = ok_run(plugin_runs, f"{ex}/eager").outputs
    inductor = ok_run(plugin_runs, f"{ex}/inductor").outputs
    for a, b in paired(eager, inductor):
        np.testing.assert_allclose(inductor.load(b), eager.load(a), **FP32)
    # op by op: Inductor's buffers against the same FX nodes executed one by one
    fx = ok_run(plugin_runs, f"{ex}/aot_eager_decomp_partition").dump
    compiled = ok_run(plugin_runs, f"{ex}/inductor").dump
    rows = paired(fx, compiled)
    assert len(rows) >= 3, "too few Inductor buffers matched FX nodes by name"
    for a, b in rows:
        np.testing.assert_allclose(compiled.load(b), fx.load(a), **FP32, err_msg=a["op_key"])


BF16_RUNS = ("transformer_block/eager-bf16", "transformer_block/decomp-bf16", "transformer_block/inductor-bf16")


@uses(*BF16_RUNS)
def test_eager_vs_inductor_bf16_shows_small_real_differences(plugin_runs):
    eager, fx, inductor = (ok_run(plugin_runs, name) for name in BF16_RUNS)
    (final_eager,), (final_inductor,) = eager.outputs.tensors, inductor.outputs.tensors
    assert final_eager["dtype"] == final_inductor["dtype"] == "torch.bfloat16"
    a, b = eager.outputs.load(final_eager), inductor.outputs.load(final_inductor)
    assert not np.array_equal(a, b), "bf16 Inductor matched eager bit for bit: no fusion effect?"
    np.testing.assert_allclose(b, a, rtol=0.05, atol=0.05)

    rows = paired(fx.dump, inductor.dump)
    assert len(rows) >= 5
    differing = 0
    for g, m in rows:
        golden, mine = fx.dump.load(g), inductor.dump.load(m)
        differing += not np.array_equal(golden, mine)
        # bf16 keeps 8 significant bits: a few units in the last place at most
        scale = max(float(np.abs(golden).max()), 1e-3)
        assert float(np.abs(golden - mine).max()) <= 0.05 * scale, g["op_key"]
    assert differing >= 1, "no Inductor buffer differs from the op-by-op bf16 run"


@uses("transformer_block/decomp-bf16", "transformer_block/inductor-bf16")
def test_inductor_rows_map_to_fx_nodes(plugin_runs):
    fx = ok_run(plugin_runs, "transformer_block/decomp-bf16").dump
    compiled = ok_run(plugin_runs, "transformer_block/inductor-bf16").dump
    fx_names = {name for r in fx.tensors for name in r.get("fx_nodes", [])}
    buffers = compiled.ops()
    assert buffers and all(r["fx_nodes"] for r in buffers)
    named = [n for r in buffers for n in r["fx_nodes"]]
    known = [n for n in named if n in fx_names]
    assert len(known) >= 0.8 * len(named), sorted(set(named) - fx_names)
    for r in buffers:
        if r["op_key"] != r["buffer"]:  # buffers without origin node are named as such
            assert r["op_key"].split("-")[0] in r["fx_nodes"], "the origin node is in fx_nodes"
    assert any(len(r["fx_nodes"]) > 1 for r in buffers)


@uses("transformer_block/decomp-bf16", "transformer_block/inductor-bf16")
def test_every_inductor_record_has_its_fx_record(plugin_runs):
    """The compiled dump holds only values the FX-level dump of the same graph has, under the
    same identity (graph, step, op_key, io, index): the compare can judge every compiled row.
    Buffers equal to no FX node (a mean's sum, Welford's m2) are listed in status.json."""
    fx = ok_run(plugin_runs, "transformer_block/decomp-bf16").dump
    run = ok_run(plugin_runs, "transformer_block/inductor-bf16")
    compiled = run.dump
    fx_keys = set(fx.by_key())
    buffers = compiled.ops()
    assert buffers
    assert [r["op_key"] for r in buffers if compiled.key(r) not in fx_keys] == []
    unmapped = [b for graph in run.status.get("inductor_unmapped", {}).values() for b in graph]
    assert unmapped and all(b["buffer"] not in {r["buffer"] for r in buffers} for b in unmapped)
    assert any("mean" in b["fx_nodes"] or "var_mean" in b["fx_nodes"] for b in unmapped)
