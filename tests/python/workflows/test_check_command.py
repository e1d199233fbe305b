"""`diagnose check model.py`: the standard workflow on a script with no YAML written, the same
diagnosis as the YAML that extends workflows/graph-mode-precision.yaml with that model, and the
workflow it ran left in the run directory to keep. On examples/forgotten_eval, the cheapest
example (its verdict comes from the first step: two model runs each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "forgotten_eval" / "model.py"


def diagnose(diagnose_bin: Path, args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(cache))
    return subprocess.run([str(diagnose_bin), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def the_run(runs: Path) -> Path:
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    return run


def what_it_runs(run: Path) -> dict:
    """resolved.json without what names the file: the model, defaults, steps, verdict and reports."""
    resolved = json.loads((run / "resolved.json").read_text())
    return {key: value for key, value in resolved.items() if key not in ("name", "path")}


def test_check_is_the_standard_workflow_on_the_script(diagnose_bin, tmp_path, inductor_cache):
    args = ["--backend", "inductor", "--device", "cpu"]
    checked = diagnose(
        diagnose_bin, ["check", str(SCRIPT), *args, "--output-dir", "check", "-q"], tmp_path, inductor_cache
    )
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.startswith("✗ Known cause: training_mode_dropout\n"), checked.stdout

    (tmp_path / "equivalent.yaml").write_text(
        f"extends: {ROOT / 'workflows' / 'graph-mode-precision.yaml'}\n"
        f"model: {{script: {SCRIPT}, backend: inductor, device: cpu}}\n"
    )
    by_yaml = diagnose(diagnose_bin, ["equivalent.yaml", "--output-dir", "yaml", "-q"], tmp_path, inductor_cache)
    check_run, yaml_run = the_run(tmp_path / "check"), the_run(tmp_path / "yaml")
    # The same verdict block, but for the run directory it names.
    assert by_yaml.returncode == checked.returncode, by_yaml.stderr
    assert by_yaml.stdout.replace(str(yaml_run), "RUN") == checked.stdout.replace(str(check_run), "RUN")

    assert what_it_runs(check_run) == what_it_runs(yaml_run)
    verdicts = [json.loads((run / "report.json").read_text())["verdict"] for run in (check_run, yaml_run)]
    assert verdicts[0]["category"] == verdicts[1]["category"] == "known_cause"
    assert verdicts[0]["culprit"] == verdicts[1]["culprit"] == "training_mode_dropout"

    # The workflow check ran is a file of its own: the standard workflow's steps and comments, the model set.
    kept = (check_run / "workflow.yaml").read_text()
    assert kept.startswith("# Written by diagnose check") and f"script: {SCRIPT}" in kept
    assert "- id: fusion" in kept and "# The graph-mode precision flowchart" in kept
    validated = diagnose(diagnose_bin, ["validate", str(check_run / "workflow.yaml")], tmp_path, inductor_cache)
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_check_help_and_bad_input(diagnose_bin, tmp_path, inductor_cache):
    shown = diagnose(diagnose_bin, ["check", "--help"], tmp_path, inductor_cache)
    assert shown.returncode == 0 and "diagnose check model.py" in shown.stdout
    assert len(shown.stdout.splitlines()) < 25, shown.stdout
    missing = diagnose(diagnose_bin, ["check", "no_such_model.py"], tmp_path, inductor_cache)
    assert missing.returncode == 2 and "no_such_model.py" in missing.stderr
    assert not (tmp_path / "runs").exists()


def test_a_script_that_ends_without_compiling_stops_at_once(diagnose_bin, tmp_path, inductor_cache):
    script = tmp_path / "no_compile.py"
    script.write_text(
        "import sys\nimport torch\n\nif sys.argv[1:] == ['--skip']:\n    print('skipped the model')\n"
        "    raise SystemExit(0)\ntorch.compile(torch.nn.Linear(2, 2))(torch.ones(1, 2))\n"
    )
    checked = diagnose(
        diagnose_bin, ["check", str(script), "--output-dir", "runs", "--", "--skip"], tmp_path, inductor_cache
    )
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert "? Inconclusive" in checked.stdout and "skipped the model" in checked.stdout, checked.stdout
    report = json.loads((the_run(tmp_path / "runs") / "report.json").read_text())
    assert report["verdict"]["category"] == "inconclusive"
    first, *later = report["steps"]
    assert first["status"] == "error", first
    assert first["summary"].startswith("the script ended without compiling anything: run "), first["summary"]
    assert all(step["status"] == "skipped" for step in later), [step["status"] for step in later]


def test_check_runs_the_scripts_own_backend(diagnose_bin, tmp_path, inductor_cache):
    """A script that passes its own backend object to torch.compile (examples/fusion_rules,
    unchanged) is checked with that backend, named as its workflow.yaml names it: the same
    verdict, no YAML written. The standard workflow's test on the example is this one (the same
    workflow, run once)."""
    script = ROOT / "examples" / "fusion_rules" / "model.py"
    checked = diagnose(diagnose_bin, ["check", str(script), "--output-dir", "check"], tmp_path, inductor_cache)
    assert checked.returncode == 1 and "backend fusion_backend:backend (the script's own)" in checked.stderr
    run = the_run(tmp_path / "check")
    assert "backend: fusion_backend:backend" in (run / "workflow.yaml").read_text()
    verdict = json.loads((run / "report.json").read_text())["verdict"]
    assert verdict["category"] == "fusion_defect" and "GeluFusionPass" in verdict["culprit"], verdict
    assert any("GeluFusionPass" in finding["message"] for finding in verdict["findings"]), verdict["findings"]
    assert verdict["reproduce"], "a verdict without the commands that reproduce it"
