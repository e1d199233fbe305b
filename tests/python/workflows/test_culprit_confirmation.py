"""A culprit is named only once an intervention run confirms it (docs/workflow.md, "How a culprit
is confirmed"). graph_pass_defect's model and backend (a post-grad pass that negates one `sub`),
with a dump artifact planted ahead of the real defect: the compiled run's dump has its first
buffer negated after the run wrote it, so the comparison ranks that buffer first. The
intervention with its nodes run eagerly leaves the final outputs failing (rejected); the next
candidate, the buffer that holds the negated `sub`, run eagerly makes them pass (confirmed)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fixtures.workflow_run import processes_started, run_workflow

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "graph_pass_defect"

MODEL = f"""\
import atexit
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, {str(EXAMPLE)!r})
import graph_pass_backend  # noqa: E402
from model import MLP  # noqa: E402  the example's model.py: this script runs as __main__, not as model


def plant_artifact():
    \"\"\"The compiled-level dump's first buffer negated once the run wrote it: a dump that does not
    hold what the compiled code computed.\"\"\"
    spec = json.loads(Path(os.environ["DIAGNOSE_RUN_SPEC"]).read_text())
    manifest = Path(spec["output_dir"]) / "dump" / "manifest.jsonl"
    if spec.get("dump", {{}}).get("level") != "compiled" or not manifest.is_file():
        return
    for line in manifest.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "tensor" and record.get("kind", "op") == "op" and record.get("file"):
            path = manifest.parent / record["file"]
            np.save(path, -np.load(path))
            return


atexit.register(plant_artifact)
torch.manual_seed(0)
compiled = torch.compile(MLP().eval(), backend=graph_pass_backend.backend)
with torch.no_grad():
    compiled(torch.randn(4, 16, generator=torch.Generator().manual_seed(100)))
"""

WORKFLOW = """\
name: planted_artifact
model: {script: model.py, backend: "graph_pass_backend:backend", device: cpu}
steps:
  - id: graph_compare
    kind: graph_dump_compare
    referee: true
"""


def test_a_planted_dump_artifact_is_rejected_and_the_real_culprit_confirmed(diagnose_bin, tmp_path, inductor_cache):
    directory = tmp_path / "planted"
    directory.mkdir()
    (directory / "model.py").write_text(MODEL)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, directory, WORKFLOW, env=env, timeout=600)
    report = json.loads((run_dir / "report.json").read_text())
    (step,) = report["steps"]
    metrics = step["metrics"]
    assert step["status"] == "fail", (step["summary"], done.stderr[-3000:])
    confirmation = metrics["confirmation"]
    rejected, confirmed = confirmation["attempts"]
    # the planted buffer ranked first and the intervention rejected it: the outputs still fail
    assert rejected["outcome"] == "rejected" and rejected["run"] == "confirm-1", confirmation
    assert rejected["after"]["failed"] > 0, rejected
    # the buffer holding the negated sub, run eagerly, makes the outputs pass
    assert confirmed["outcome"] == "confirmed" and confirmed["run"] == "confirm-2", confirmation
    assert confirmed["after"]["failed"] == 0 and confirmed["before"]["failed"] > 0, confirmed
    assert "g0.centred" in confirmed["graph_nodes"], confirmed  # `centred = h - h.mean(...)`
    assert confirmation["outcome"] == "confirmed" and confirmation["runs"] == 2, confirmation
    assert metrics["culprit"] == confirmed["candidate"] != rejected["candidate"], metrics["culprit"]
    assert "sub" in metrics["culprit_nodes"], metrics["culprit_nodes"]
    verdict = report["verdict"]
    assert verdict["category"] == "localized_op_defect" and verdict["culprit"] == metrics["culprit"], verdict
    assert verdict["confirmation"]["outcome"] == "confirmed", verdict
    assert verdict["findings"][0]["message"].startswith("culprit confirmed: with `" + metrics["culprit"]), verdict
    # golden, target, the undumped target, and the two interventions
    assert processes_started(report) == 5, [run["name"] for run in step["runs"]]
