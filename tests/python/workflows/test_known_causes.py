"""The known_causes step kind's own keys: a workflow's causes (A/B experiments of its own) are
validated by `diagnose validate` with file:line:column errors, and a valid one passes. The
catalogue's detectors are unit-tested in tests/steps/known_causes_test.cc; the examples with
planted known causes run end to end in test_standard_workflow.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
