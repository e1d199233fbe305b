"""Ops whose outputs are uninitialised memory: the plugin's list is the comparison core's, and
the single-op check skips them with that reason (a dropout in training mode calls empty_like in
eager: its output is whatever the allocator left, different in every run)."""

from __future__ import annotations

import json
import re

import torch

from conftest import REPO, ok_run, single_op_check, uses
from diagnose_pytorch.checks.uninitialized_ops import UNINITIALIZED, UNINITIALIZED_OP_PACKETS, is_uninitialized_op
from test_single_op_seeded import DROPOUT

EMPTY_LIKE = "aten.empty_like.default"


def test_the_list_is_the_comparison_cores():
    source = (REPO / "compare" / "uninitialized_ops.cc").read_text()
    body = source[source.index("uninitialized_op_packets() {") : source.index("return packets;")]
    assert set(re.findall(r'"([a-z_]+\.[a-z_]+)"', body)) == UNINITIALIZED_OP_PACKETS
    for packet in UNINITIALIZED_OP_PACKETS:  # every one a real operator of this torch
        namespace, name = packet.split(".")
        assert getattr(getattr(torch.ops, namespace), name).overloads(), packet


def test_any_overload_and_nothing_else():
    assert is_uninitialized_op(EMPTY_LIKE)
    assert is_uninitialized_op("aten.empty.memory_format")
    assert is_uninitialized_op("prims.empty_strided.default")
    assert not is_uninitialized_op("aten.empty_like")
    assert not is_uninitialized_op("aten.zeros_like.default")
    assert not is_uninitialized_op(DROPOUT)


@uses("attention/eager")
def test_single_op_check_skips_them(plugin_runs, cache_dir, tmp_path):
    out = tmp_path / "single"
    single_op_check(ok_run(plugin_runs, "attention/eager"), [EMPTY_LIKE], out, cache_dir)
    ops = {o["op"]: o for o in json.loads((out / "single_op.json").read_text())["ops"]}
    assert ops[EMPTY_LIKE]["status"] == "skipped" and ops[EMPTY_LIKE]["reason"] == UNINITIALIZED, ops
    events = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert [(e["op"], e["event"], e.get("reason")) for e in events] == [
        (EMPTY_LIKE, "start", None),
        (EMPTY_LIKE, "skipped", UNINITIALIZED),
    ]
    for side in ("eager", "graph"):  # nothing written to be compared
        manifest = (out / side / "manifest.jsonl").read_text().splitlines()
        assert not [r for r in map(json.loads, manifest) if r.get("op") == EMPTY_LIKE], side
