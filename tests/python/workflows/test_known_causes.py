"""The known_causes step kind's own keys: a workflow's causes (A/B experiments of its own) are
validated by `diagnose validate` with file:line:column errors, a valid one passes, and one whose
flip makes the compiled run pass becomes the verdict. The catalogue's detectors are unit-tested
in tests/steps/known_causes_test.cc; the examples with planted known causes run end to end in
test_standard_workflow.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fixtures.workflow_run import processes_started, run_workflow

ROOT = Path(__file__).resolve().parents[3]

WORKFLOW = f"""model: {{script: {ROOT / "examples/mlp/model.py"}, backend: inductor}}
steps:
  - id: known
    kind: known_causes
    experiments: true
    causes:
      - {{name: exact_math, flip: {{env: {{FAST_MATH: "0"}}, args: [--exact]}}, fix: unset FAST_MATH}}
{{extra}}"""


def validate(diagnose_bin: Path, directory: Path, extra: str = "") -> subprocess.CompletedProcess:
    (directory / "wf.yaml").write_text(WORKFLOW.replace("{extra}", extra))
    return subprocess.run(
        [str(diagnose_bin), "validate", "wf.yaml"], cwd=directory, capture_output=True, text=True, timeout=60
    )


def test_a_workflows_own_cause_validates(diagnose_bin, tmp_path):
    done = validate(diagnose_bin, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_bad_causes_are_named_at_their_position(diagnose_bin, tmp_path):
    extra = """      - {name: fallback_random, flip: {env: {A: "1"}}}
      - {name: nothing, flip: {}}
  - id: config
    kind: known_causes
    causes:
      - {name: other, flip: {args: [--exact]}}
"""
    done = validate(diagnose_bin, tmp_path, extra)
    errors = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 2, errors
    assert "wf.yaml:8:16: error: steps.known: causes[1].name: 'fallback_random' is already a cause" in errors
    assert any(e.startswith("wf.yaml:9:") and "causes[2].flip: give what the experiment changes" in e for e in errors)
    assert any(e.startswith("wf.yaml:13:") and "set experiments: true" in e for e in errors)


# examples/random_noise: Inductor draws its own random numbers unless the script's --eager-rng
# sets fallback_random; the workflow names that flag as a cause of its own.
USER_CAUSE_WORKFLOW = f"""model: {{script: {ROOT / "examples/random_noise/model.py"}, backend: inductor, timeout: 600}}
steps:
  - id: known
    kind: known_causes
    experiments: true
    causes:
      - {{name: script_eager_rng, flip: {{args: [--eager-rng]}}, expect: "graph mode draws eager's random numbers",
         fix: "run the script with --eager-rng"}}
"""


def test_a_workflows_own_cause_whose_flip_passes_is_the_verdict(diagnose_bin, tmp_path, inductor_cache):
    (tmp_path / "wf.yaml").write_text(USER_CAUSE_WORKFLOW)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done = subprocess.run(
        [str(diagnose_bin), "wf.yaml", "--output-dir", "runs", "--quiet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]  # beside it history.sqlite
    report = json.loads((run_dir / "report.json").read_text())
    verdict = report["verdict"]
    assert verdict["category"] == "known_cause", verdict["summary"]
    assert verdict["culprit"] == "script_eager_rng", verdict["summary"]
    assert any("run the script with --eager-rng" in finding["message"] for finding in verdict["findings"])
    assert any("--eager-rng" in command for command in verdict["reproduce"]), verdict["reproduce"]
    # the golden eager run, the compiled run twice as configured, once with the flag
    assert processes_started(report) == 4


# The repeated eager run of known_config runs out of memory (as on a full device); the first run
# does not. The script tells them apart by what the run spec dumps: the repeat keeps statistics only.
REPEAT_FAILS_MODEL = """\
import json
import os

import torch

with open(os.environ["DIAGNOSE_RUN_SPEC"]) as spec:
    if json.load(spec)["dump"].get("stats_only"):
        raise MemoryError("out of memory allocating 4 GiB for the second run")
torch.manual_seed(0)
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()))
model(torch.randn(4, 8))
"""

REPEAT_FAILS_WORKFLOW = """\
model: {script: model.py, backend: inductor, device: cpu}
steps:
  - id: known_config
    kind: known_causes
"""


def test_a_failed_repeat_costs_the_run_to_run_check_only(diagnose_bin, tmp_path, inductor_cache):
    (tmp_path / "model.py").write_text(REPEAT_FAILS_MODEL)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, REPEAT_FAILS_WORKFLOW, env=env, timeout=300)
    (step,) = json.loads((run_dir / "report.json").read_text())["steps"]
    assert step["status"] == "pass", (step["summary"], done.stderr[-3000:])
    assert "checked in 1 run(s)" in step["summary"], step["summary"]
    (finding,) = [f["message"] for f in step["findings"] if "nondeterministic_op" in f["message"]]
    assert "run-to-run check not possible: model run failed: repeat" in finding, finding
    assert "MemoryError: out of memory allocating 4 GiB for the second run" in finding, finding
    table = next(e["value"] for e in step["evidence"] if e["name"] == "known causes checked")
    results = {row["cause"]: row["result"] for row in table}
    assert results["nondeterministic_op"] == "not comparable", results
    assert results["training_mode_dropout"] == "not found", results  # the other detectors ran
    assert any(e["kind"] == "log" and "repeat stderr" in e["name"] for e in step["evidence"]), step["evidence"]
