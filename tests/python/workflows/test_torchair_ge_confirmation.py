"""A TorchAir GE op confirmed by an intervention run: the real torchair over the CANN stand-in,
whose GeluFusionPass is planted faulty, on a model with one GELU after a linear layer. The GE
dump names the GELU's op only by a node of TorchAir's ATen graph; the map the plugin writes beside
it (diagnose_graph_nodes_rank_0.json) ties that node to Dynamo's, and the run with that node run
eagerly (the rest compiled by TorchAir, where the GELU is no longer fused) matches eager.

The model is called as a decoder is under `dynamic=True` (plugin/scripts/prefill_decode.py): a
4-token prompt, then 3 one-token calls, a graph of their own; only the one-token calls take the
GELU. GE numbers each graph's runs on its own (the decode graph's tokens
0-2 are calls 2-4); the record of calls the plugin writes beside the dump
(diagnose_graph_calls_rank_0.json) gives each row its call, so the first diverging call is 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures import real_torchair
from fixtures.compare_cli import find_binary

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = ROOT / "tests" / "python" / "plugin" / "scripts" / "prefill_decode.py"


def run_steps(tmp_path: Path, steps: list[dict]) -> tuple[Path, dict[str, dict]]:
    """Runs the workflow of `steps` on the prefill/decode model, GELU fusion faulty; its run
    directory and its steps' reports by id."""
    pythonpath = [*real_torchair.pythonpath(), str(ROOT / "plugins" / "pytorch")]
    workflow = {
        "name": "torchair_ge_confirmation",
        "model": {
            "script": str(SCRIPT),
            "python": sys.executable,
            "backend": "torchair",
            "timeout": 600,
            "env": {"PYTHONPATH": os.pathsep.join(pythonpath), "CANN_STAND_IN_FAULTS": "GeluFusionPass"},
        },
        "defaults": {"slots": 1},
        "steps": steps,
    }
    (tmp_path / "workflow.yaml").write_text(json.dumps(workflow))  # JSON is YAML
    out = tmp_path / "out"
    subprocess.run(
        [str(find_binary()), str(tmp_path / "workflow.yaml"), "--output-dir", str(out), "--quiet"],
        env=dict(os.environ, DIAGNOSE_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=600,
    )
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    return run, {s["id"]: s for s in json.loads((run / "report.json").read_text())["steps"]}


@pytest.mark.e2e
def test_a_ge_op_of_the_decode_graph_is_confirmed_at_its_call(tmp_path: Path):
    run, steps = run_steps(tmp_path, [{"id": "graph_compare", "kind": "graph_dump_compare", "referee": True}])
    step = steps["graph_compare"]
    graph_nodes = json.loads(next(run.rglob("diagnose_graph_nodes_rank_0.json")).read_text())["graphs"]
    assert any(nodes.get("gelu") for nodes in graph_nodes.values()), graph_nodes
    graph_calls = json.loads(next(run.rglob("diagnose_graph_calls_rank_0.json")).read_text())["graphs"]
    assert sorted(graph_calls.values()) == [[0], [1, 2, 3]], graph_calls
    calls = step["metrics"]["calls"]
    assert calls["first_diverging_call"] == 2, calls
    assert [c["failed"] > 0 for c in calls["calls"]] == [False, True, True, True], calls
    confirmation = step["metrics"]["confirmation"]
    assert confirmation["outcome"] == "confirmed" and confirmation["runs"] == 1, confirmation
    assert confirmation["attempts"][0]["call"] == 2, confirmation
    assert confirmation["candidate"] == "gelu-aten.gelu.default" and confirmation["graph_nodes"], confirmation
    assert step["metrics"]["culprit"] == "gelu-aten.gelu.default" and step["metrics"]["localized"] is True, step
    assert step["findings"][0]["message"].startswith("culprit confirmed: with `gelu-aten.gelu.default`"), step


@pytest.mark.e2e
def test_dump_steps_choose_the_calls_both_dumps_hold(tmp_path: Path):
    """`dump.steps` on both sides: [2] (call 3, the decode graph's second run) is localised and
    confirmed, GE's and TorchAir's FX dump paired by the decode graph's id though neither holds
    the prefill graph's call; [0] (the prompt, which matches) holds no row of call 2, where the
    outputs first diverge, and the step says which call to dump."""

    def compare(step_id: str, steps: list[int]) -> dict:
        sides = {"dump": {"steps": steps}}
        return {"id": step_id, "kind": "graph_dump_compare", "on_failure": "continue", "golden": sides, "target": sides}

    _, steps = run_steps(tmp_path, [compare("third_call", [2]), compare("prompt", [0])])
    third = steps["third_call"]
    assert third["metrics"]["culprit"] == "gelu-aten.gelu.default", third["summary"]
    assert third["metrics"]["confirmation"]["outcome"] == "confirmed", third["metrics"]["confirmation"]
    prompt = steps["prompt"]
    assert prompt["metrics"]["culprit"] is None, prompt["summary"]
    messages = [f["message"] for f in prompt["findings"]]
    assert "no op row of call 2 was judged, where the final outputs first diverge: dump that call " in messages[0]
    assert "(`dump.steps: [1]`" in messages[0], messages
