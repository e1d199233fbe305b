"""The CI gate end to end with a real model (examples/mlp under torch.compile, aot_eager): no
baseline yet (the gate says how to record one), the baseline saved from that run, the unchanged
model passes, a version with a planted regression (--perturb-weight) fails with per-output JUnit,
runs its diagnostic workflow and shows the trend in its report (checked in headless Chromium);
the history lists every run; a damaged baseline is refused before anything runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fixtures.chromium import check_fits, dump_dom, elements, find

ROOT = Path(__file__).resolve().parents[3]


def gate_workflow(model_args: list[str]) -> str:
    return f"""
name: ci-gate
model:
  script: {ROOT / "examples" / "mlp" / "model.py"}
  python: {sys.executable}
  args: {model_args}
  backend: aot_eager
  timeout: 300
steps:
  - id: gate
    kind: gate
    target: {{}}
    tolerances:
      fp32: {{rtol: 1e-4, atol: 1e-5}}
    diagnose_workflow: diagnosis.yaml
"""


DIAGNOSIS = """
name: diagnosis
model:
  argv: [python3, -c, "pass"]
steps:
  - id: outputs
    kind: compare
    description: the failing version's outputs against the baseline's, op by op
    golden: ${env.DIAGNOSE_BASELINE}/outputs
    target: ${env.DIAGNOSE_GATE_TARGET}/outputs
    diagnoses: localized_op_defect
"""


class Gate:
    def __init__(self, diagnose_bin: Path, work: Path, inductor_cache: Path):
        self.bin, self.work, self.inductor_cache = diagnose_bin, work, inductor_cache
        self.runs = work / "runs"
        self.baseline = work / "baseline"
        (work / "v1.yaml").write_text(gate_workflow([]))
        (work / "v2.yaml").write_text(gate_workflow(["--perturb-weight", "0.5"]))
        (work / "diagnosis.yaml").write_text(DIAGNOSIS)

    def diagnose(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(self.inductor_cache))
        return subprocess.run(
            [str(self.bin), *args], cwd=self.work, capture_output=True, text=True, timeout=timeout, env=env
        )

    def gate(self, workflow: str, version: str, *extra: str) -> subprocess.CompletedProcess:
        return self.diagnose(
            "gate",
            workflow,
            "--baseline",
            str(self.baseline),
            "--model-version",
            version,
            "--output-dir",
            str(self.runs),
            *extra,
        )

    def run_dirs(self) -> list[Path]:
        return sorted(p for p in self.runs.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def gate(diagnose_bin, tmp_path_factory, inductor_cache):
    return Gate(diagnose_bin, tmp_path_factory.mktemp("gate"), inductor_cache)


def junit_cases(path: Path) -> dict[str, bool]:
    """Test case name -> passed."""
    tree = ET.parse(path)
    return {case.get("name"): case.find("failure") is None for case in tree.iter("testcase")}


def test_first_run_without_baseline_says_how_to_record_one(gate):
    done = gate.gate("v1.yaml", "v1")
    assert done.returncode == 2, done.stdout + done.stderr
    # the whole message on stderr; stdout's verdict block wraps it to the terminal's width
    assert "no baseline at" in done.stderr and "diagnose baseline save" in done.stderr
    (run_dir,) = gate.run_dirs()
    saved = gate.diagnose("baseline", "save", str(run_dir), "--run", "gate/target", "--to", str(gate.baseline))
    assert saved.returncode == 0, saved.stderr
    assert "model version v1" in saved.stdout
    shown = gate.diagnose("baseline", "show", str(gate.baseline))
    assert shown.returncode == 0, shown.stderr
    assert '"torch_version": "2.13' in shown.stdout and '"backend": "aot_eager"' in shown.stdout
    again = gate.diagnose("baseline", "save", str(run_dir), "--to", str(gate.baseline))
    assert again.returncode == 2 and "exists already" in again.stderr and "--force" in again.stderr


def test_unchanged_model_passes(gate):
    junit = gate.work / "gate-v1.1.xml"
    done = gate.gate("v1.yaml", "v1.1", "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate: PASSED" in done.stdout
    cases = junit_cases(junit)
    assert cases == {"output.0": True}


def test_planted_regression_fails_diagnoses_and_reports(gate, tmp_path):
    junit = gate.work / "gate-v2.xml"
    done = gate.gate("v2.yaml", "v2", "--junit", str(junit))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate: FAILED" in done.stdout
    assert junit_cases(junit) == {"output.0": False}
    failure = ET.parse(junit).find(".//failure")
    assert failure is not None and "relative L2" in failure.text
    assert "diagnosis: Defect localised to an op" in done.stderr  # the step's summary

    run_dir = gate.run_dirs()[-1]
    html = run_dir / "report.html"
    dom = elements(dump_dom(html))
    verdict = find(dom, "section", id="verdict")[0]
    assert verdict.attrs["data-category"] == "precision_problem"
    assert "regressed" in find(dom, "p", class_="verdict-sentence")[0].text
    assert [(e.attrs["data-step"], e.attrs["data-status"]) for e in find(dom, "g", class_="box")] == [("gate", "fail")]
    step = find(dom, "section", id="step-gate")[0]
    assert "diagnosis (diagnosis.yaml)" in step.text and "localised to an op" in step.text
    trend = find(dom, "svg", data_chart="history-trend")
    assert len(trend) == 1
    labels = [e.text for e in find(dom, "text", class_="tick")]
    assert "v1.1" in labels and "v2" in labels
    links = [e.attrs["href"] for e in find(dom, "a") if not e.attrs.get("href", "#").startswith("#")]
    diagnosis = [h for h in links if h.endswith("report.html")]
    assert diagnosis and (run_dir / diagnosis[0]).is_file()
    for href in links:
        assert (run_dir / href).exists(), href

    for facts in check_fits(html, tmp_path, "failing-gate"):
        (trend_box,) = [c for c in facts["charts"] if c["kind"] == "history-trend"]
        assert trend_box["w"] > 600 and trend_box["fail_points"] >= 1


def test_history_lists_runs_and_the_outputs_trend(gate):
    db = gate.runs / "history.sqlite"
    listed = gate.diagnose("history", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert len(lines) == 3
    assert "v2" in lines[0] and "precision_problem" in lines[0] and "0/1 ok" in lines[0]
    assert "v1.1" in lines[1] and "1/1 ok" in lines[1]
    trend = gate.diagnose("history", "--db", str(db), "--output", "output.0")
    assert trend.returncode == 0, trend.stderr
    rows = trend.stdout.splitlines()[2:]
    assert rows[0].split()[:1] == ["v1.1"] and " pass " in rows[0]
    assert rows[1].split()[:1] == ["v2"] and " FAIL " in rows[1]
    unknown = gate.diagnose("history", "--db", str(db), "--output", "logits")
    assert unknown.returncode == 2 and "recorded outputs: output.0" in unknown.stderr


def test_damaged_baseline_is_refused_before_the_model_runs(gate):
    damaged = gate.work / "damaged"
    shutil.copytree(gate.baseline, damaged)
    tensor = next((damaged / "outputs" / "tensors").iterdir())
    data = bytearray(tensor.read_bytes())
    data[-1] ^= 0x01
    tensor.write_bytes(bytes(data))
    before = len(gate.run_dirs())
    done = gate.diagnose("gate", "v1.yaml", "--baseline", str(damaged), "--output-dir", str(gate.runs), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "has changed since the baseline was saved" in done.stderr  # stdout's block wraps it
    run_dir = gate.run_dirs()[-1]
    assert len(gate.run_dirs()) == before + 1
    assert not (run_dir / "steps" / "gate" / "target").exists()  # nothing ran
    shown = gate.diagnose("baseline", "show", str(damaged))
    assert shown.returncode == 2 and "outputs/tensors/" in shown.stderr


def test_corrupt_history_is_a_clear_error(gate, tmp_path):
    db = tmp_path / "history.sqlite"
    db.write_bytes(b"not sqlite at all\n" * 300)
    done = gate.diagnose("history", "--db", str(db))
    assert done.returncode == 2
    assert f"history database {db}" in done.stderr and "not a database" in done.stderr
