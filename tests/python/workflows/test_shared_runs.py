"""A run two steps need is made once (orchestrator/engine/shared_runs.h): eager_device_vs_cpu's
golden and target (both eager on CPU here) and dynamo_meta_check's eager run differ only in what
they dump, so the engine merges their needs (the float64 truth, the meta check) into one eager
run that all three requests get; --resume keeps it for a step that runs again. The script counts
its own runs in a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fixtures.workflow_run import processes_started, run_workflow

MODEL = """\
import torch

with open("runs.txt", "a") as runs:
    runs.write("run\\n")
torch.manual_seed(0)
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()))
model(torch.randn(4, 8))
"""

WORKFLOW = """\
name: shared_runs
model: {script: model.py, backend: inductor, device: cpu}
steps:
  - id: eager_device
    kind: eager_device_vs_cpu
    referee: true
  - id: dynamo
    kind: dynamo_meta_check
    backends: []
"""


def test_one_eager_run_serves_two_steps(diagnose_bin, tmp_path, inductor_cache):
    (tmp_path / "model.py").write_text(MODEL)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, WORKFLOW, env=env, timeout=300)
    report = json.loads((run_dir / "report.json").read_text())
    assert (tmp_path / "runs.txt").read_text() == "run\n", done.stderr[-3000:]
    steps = {step["id"]: step for step in report["steps"]}
    assert [steps[s]["status"] for s in ("eager_device", "dynamo")] == ["pass", "pass"], done.stderr[-3000:]
    assert steps["dynamo"]["metrics"]["meta_checked"] > 0  # the merged run ran the meta check

    golden, target = steps["eager_device"]["runs"]
    (eager,) = steps["dynamo"]["runs"]
    assert "shared_from" not in golden
    assert target["shared_from"] == eager["shared_from"] == {"step": "eager_device", "run": "golden"}
    assert target["dump_dir"] == eager["dump_dir"] == golden["dump_dir"]
    spec = json.loads((run_dir / "steps/eager_device/golden/spec.json").read_text())
    # the one run keeping tensors takes the whole dump budget (test_dump_budget.py)
    assert (spec["dump"], spec["checks"]) == ({"level": "aten", "truth": True, "max_bytes": 1 << 30}, {"meta": True})
    assert not (run_dir / "steps/dynamo/eager").exists()
    assert "shared with step eager_device" in (run_dir / "report.html").read_text()

    # dynamo changed: it runs again on --resume, and gets the kept run
    (tmp_path / "wf.yaml").write_text(WORKFLOW + "    fail_on_graph_breaks: false\n")
    resumed = subprocess.run(
        [str(diagnose_bin), "wf.yaml", "-q", "--resume", str(run_dir)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads((run_dir / "report.json").read_text())
    assert (tmp_path / "runs.txt").read_text() == "run\n", resumed.stderr[-3000:]
    (eager,) = report["steps"][1]["runs"]
    assert (report["steps"][1]["status"], eager["shared_from"]) == ("pass", {"step": "eager_device", "run": "golden"})


BISECTED = """\
name: shared_compiled_run
model: {script: model.py, backend: inductor, device: cpu}
steps:
  - id: graph_compare
    kind: graph_dump_compare
  - id: known_causes
    kind: known_causes
    experiments: true
  - id: fusion
    kind: fusion_bisect
    max_trials: 2
"""


def test_compiled_runs_are_shared_in_their_order(diagnose_bin, tmp_path, inductor_cache):
    """graph_dump_compare's target dumps Inductor's buffers from a compile of its own (its FX graph
    cache off), so the step runs the target undumped too, and that run is known_causes' first
    compiled run and the all-on trial: one compiled process, three uses. The second compiled run
    (the run-to-run check, the all-on repeat) is another process, which both steps share; an
    Inductor run works in the model's directory."""
    (tmp_path / "model.py").write_text(MODEL)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, BISECTED, env=env, timeout=600)
    report = json.loads((run_dir / "report.json").read_text())
    steps = {step["id"]: step for step in report["steps"]}
    assert steps["graph_compare"]["status"] == "pass", done.stderr[-3000:]
    target = next(run for run in steps["graph_compare"]["runs"] if run["name"] == "target")
    assert target["cwd"] == str(tmp_path)
    ab_trials = next(e["value"] for e in steps["known_causes"]["evidence"] if e["name"] == "A/B trials")
    first, second = (row["trial"] for row in ab_trials if row["flipped"] == "nothing")  # the compiled run twice
    ab = {run["name"]: run for run in steps["known_causes"]["runs"]}
    assert ab[first]["shared_from"] == {"step": "graph_compare", "run": "target-undumped"}
    assert "shared_from" not in ab[second]
    table = next(e["value"] for e in steps["known_causes"]["evidence"] if e["name"] == "known causes checked")
    repeat = next(row for row in table if row["cause"] == "nondeterministic_run")
    assert (repeat["result"], repeat["evidence"]) == ("not found", "the two runs' outputs are bitwise equal")
    trials = {run["name"]: run for run in steps["fusion"]["runs"]}
    assert trials[first]["shared_from"] == {"step": "graph_compare", "run": "target-undumped"}
    assert trials[second]["shared_from"] == {"step": "known_causes", "run": second}  # the all-on repeat
    runs = [run for step in report["steps"] for run in step["runs"]]
    shared = [run for run in runs if "shared_from" in run]
    assert shared == [ab[first], trials[first], trials[second]]
    assert processes_started(report) == len(runs) - len(shared)
    assert (tmp_path / "runs.txt").read_text() == "run\n" * processes_started(report), done.stderr[-3000:]
