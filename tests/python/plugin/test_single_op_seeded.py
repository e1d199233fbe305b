"""The single-op check of ops tagged nondeterministic_seeded: attention in eval mode (dropout 0)
uses no randomness and is checked alone like any op; a dropout in training mode depends on the
RNG and is reported as skipped, in single_op.json and in progress.jsonl (which the C++ step
reads). status.json names the Inductor switches in force, for the rule attribution."""

from __future__ import annotations

import json

import torch

from conftest import CATALOG, HERE, RunConfig, ok_run, single_op_check, uses
from diagnose_pytorch.checks.single_op import _bitwise_equal

SCRIPT = HERE / "scripts" / "attention.py"
RUNS = {"attention/eager": RunConfig(str(SCRIPT), {"mode": "eager"})}
CATALOG.update(RUNS)

ATTENTION = "aten._scaled_dot_product_flash_attention_for_cpu.default"
DROPOUT = "aten.bernoulli_.float"  # F.dropout(p=0.5, training=True) in eager: empty_like, bernoulli_, div_, mul


@uses("attention/eager")
def test_attention_is_checked_alone_and_dropout_is_skipped_as_random(plugin_runs, cache_dir, tmp_path):
    out = tmp_path / "single"
    single_op_check(ok_run(plugin_runs, "attention/eager"), [ATTENTION, DROPOUT], out, cache_dir)
    document = json.loads((out / "single_op.json").read_text())
    ops = {o["op"]: o for o in document["ops"]}
    assert torch.Tag.nondeterministic_seeded in torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default.tags
    assert ops[ATTENTION]["status"] == "ok" and ops[ATTENTION]["calls"] >= 1, ops[ATTENTION]
    assert ops[DROPOUT]["status"] == "skipped" and ops[DROPOUT]["reason"] == "random", ops[DROPOUT]
    events = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert [(e["op"], e["event"], e.get("reason")) for e in events] == [
        (ATTENTION, "start", None),
        (ATTENTION, "done", None),
        (DROPOUT, "start", None),
        (DROPOUT, "skipped", "random"),
    ]
    assert "depend on the RNG" in events[-1]["message"]
    # the attention output and its logsumexp, on both sides
    for side in ("eager", "graph"):
        records = [json.loads(line) for line in (out / side / "manifest.jsonl").read_text().splitlines()]
        assert {r["index"] for r in records if r.get("op") == ATTENTION} == {0, 1}, side
    # the Inductor switches in force, for a rule search over these one-op graphs
    status = json.loads((out / "status.json").read_text())
    assert status["format"] == "diagnose-run-status" and status["state"] == "ok"
    assert "split_reductions" in status["inductor_rules"]["fired"]


def test_bitwise_equality_sees_nans_structure_and_bits():
    nan = torch.tensor([float("nan"), 1.0])
    assert _bitwise_equal((nan, 3), (nan.clone(), 3))
    assert not _bitwise_equal((nan, 3), (nan, 4))
    assert not _bitwise_equal(torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    assert not _bitwise_equal(torch.tensor([0.0]), torch.tensor([-0.0]))  # equal, not the same bits
    assert not _bitwise_equal([torch.ones(1)], (torch.ones(1),))


def test_one_call_is_checked_per_signature_and_a_call_without_inputs_gives_way():
    """A layer repeated N times is one check per distinct signature; a call whose inputs the
    dump's budget left to statistics gives way to one of the same signature that kept them."""
    from diagnose_pytorch.checks.recorded_calls import RecordedCall
    from diagnose_pytorch.checks.single_op import _calls_to_check

    def call(seq, shape, kept=True):
        record = {"shape": shape, "dtype": "torch.float32", "stride": [shape[1], 1]}
        record.update({"file": f"tensors/{seq}.npy"} if kept else {"not_kept": "budget"})
        return RecordedCall(
            "aten.mm.default", f"layers.{seq}/mm#0", seq, 0, {"args": [{"input": 0}]}, {(0, None): record}
        )

    layers = [call(0, [4, 8], kept=False), call(1, [4, 8]), call(2, [4, 8]), call(3, [2, 8]), call(4, [3, 8], False)]
    chosen, missing = _calls_to_check(layers, 1)
    assert [c.seq for c in chosen] == [1, 3] and missing == 1
    assert [c.seq for c in _calls_to_check(layers, 2)[0]] == [1, 2, 3]
    # no call replayable: the first, whose replay says why
    assert [c.seq for c in _calls_to_check([layers[0], layers[4]], 1)[0]] == [0]
