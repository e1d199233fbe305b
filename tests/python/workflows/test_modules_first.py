"""graph_compare with `localisation: modules_first` at the real width of a shipped model
(bench/qwen2_scale_model.py: Qwen2-0.5B's layer shape, 2 layers, a vocabulary of 1024, 16 tokens,
bfloat16, Inductor on CPU). Clean, the module outputs alone are dumped and judged, each against
its float64 truth, and they pass: the verdict says it was judged at module outputs, every row of
them element-wise. With a defect planted in layer 1's MLP (bench/planted_defect_backend.py, compiled
code only; off by 6%, which the final outputs absorb: they pass, as the 24-layer benchmark's do),
the module outputs fail and the op-by-op pass that follows dumps only the ops inside the module the
first failing output leaves, `model.layers.1.mlp`, and names the op there; the intervention
confirms it by observing the op's own value with it run eagerly, the final outputs passing either
way."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fixtures.workflow_run import run_workflow

ROOT = Path(__file__).resolve().parents[3]


def workflow(planted: bool) -> str:
    planted_args = ["--planted-layer", "1", "--planted-scale", "1.06"]
    args = ["--layers", "2", "--vocab", "1024", "--tokens", "16"] + (planted_args if planted else [])
    return f"""\
name: qwen2_modules_first
model:
  script: {ROOT / "bench" / "qwen2_scale_model.py"}
  args: {json.dumps(args)}
  backend: {"planted_defect_backend:backend" if planted else "inductor"}
  dtype: bfloat16
  timeout: 900
steps:
  - id: graph_compare
    kind: graph_dump_compare
    referee: true
    localisation: modules_first
"""


def diagnose(diagnose_bin, tmp_path, inductor_cache, planted: bool) -> dict:
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, workflow(planted), env=env, timeout=1800)
    report = json.loads((run_dir / "report.json").read_text())
    (step,) = report["steps"]
    return {"report": report, "step": step, "stderr": done.stderr[-2000:], "run_dir": run_dir}


def test_clean_model_is_judged_at_module_outputs(diagnose_bin, tmp_path, inductor_cache):
    done = diagnose(diagnose_bin, tmp_path, inductor_cache, planted=False)
    step = done["step"]
    assert step["status"] == "pass", step["summary"] + done["stderr"]
    assert step["summary"].startswith("judged at module outputs"), step["summary"]
    metrics = step["metrics"]
    assert metrics["localisation"] == "modules_first"
    assert metrics["passed_on_statistics_only"] == 0 and metrics["judged"] == metrics["rows"] > 0, metrics
    # only the module-output runs were dumped: no op-by-op pass
    assert {run["name"] for run in step["runs"]} == {"golden-modules", "target-modules", "target-undumped"}
    # lm_head's logits row [16, 1024] holds the bytes of the final output, its view [1, 16, 1024]:
    # stored once, the golden's truth difference too (docs/dump-format.md)
    for run, files in (("golden-modules", ("file", "truth_delta_file")), ("target-modules", ("file",))):
        run_dir = done["run_dir"] / "steps" / "graph_compare" / run
        (final,) = [r for r in records(run_dir / "outputs") if r.get("kind") == "final"]
        (row,) = [r for r in records(run_dir / "dump") if r["shape"] == [16, 1024] and r["io"] == "output"]
        assert final["shape"] == [1, 16, 1024] and row["stats"]["hash"] == final["stats"]["hash"], (row, final)
        for field in files:
            assert os.path.samefile(run_dir / "dump" / row[field], run_dir / "outputs" / final[field]), (run, field)


def records(dump: Path) -> list[dict]:
    lines = (dump / "manifest.jsonl").read_text().splitlines()
    return [record for line in lines if (record := json.loads(line))["type"] == "tensor"]


def test_planted_defect_is_localised_inside_the_diverging_module(diagnose_bin, tmp_path, inductor_cache):
    done = diagnose(diagnose_bin, tmp_path, inductor_cache, planted=True)
    step = done["step"]
    metrics = step["metrics"]
    assert step["status"] == "fail", step["summary"] + done["stderr"]
    assert metrics["module_outputs"]["status"] == "fail", metrics["module_outputs"]
    assert metrics["localized"] is True
    assert "layers.1.mlp" in step["summary"], step["summary"]
    verdict = done["report"]["verdict"]
    assert verdict["category"] == "localized_op_defect", verdict["summary"]
    # masked: the final outputs pass, so the confirmation observed the candidate's own value
    assert metrics["final_outputs"]["failed"] == 0, metrics["final_outputs"]
    confirmation = verdict["confirmation"]
    assert confirmation["outcome"] == "confirmed" and confirmation["runs"] == 1, confirmation
    (attempt,) = confirmation["attempts"]
    observed = attempt["observed"]
    assert observed["node"] in attempt["graph_nodes"] and observed["verdict"] == "pass", attempt
    assert observed["rmse_after"] <= 3 * observed["rmse_eager"] < observed["rmse_before"], observed
    assert "now passes against float64" in verdict["findings"][0]["message"], verdict["findings"][0]
    # the op-by-op pass dumped the ops of the diverging module only
    scope = metrics["op_pass_scope"]  # as the dumps spell module paths (the compiled function's argument first)
    assert scope.endswith("model.layers.1.mlp"), metrics
    assert f"only the ops inside {scope}," in step["findings"][0]["message"], step["findings"][0]
    manifest = done["run_dir"] / "steps" / "graph_compare" / "golden" / "dump" / "manifest.jsonl"
    modules = {
        record.get("module", "")
        for line in manifest.read_text().splitlines()
        if (record := json.loads(line)).get("type", "tensor") == "tensor" and record.get("kind", "op") == "op"
    }
    assert modules and all(m.startswith(scope) for m in modules), modules
