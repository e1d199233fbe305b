"""The standard workflow at the real width of a shipped model: bench/qwen2_scale_model.py, Qwen2-0.5B's
layer shape (hidden 896, intermediate 4864, 14 heads, 2 KV heads) with 2 layers, a vocabulary of
1024 instead of 151936 (the embedding and the logits would dominate the suite's time), bfloat16,
Inductor on CPU, random weights, nothing planted. The verdict must be "no precision problem" and
rest on what was looked at: the single-op check checked at least min_judged_share of the ops it
could check, the comparing steps judged that share of their rows element-wise (no row passing on
statistics alone), within the default dump budget. bench/scale_bench.py measures the full size."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fixtures.workflow_run import run_workflow

ROOT = Path(__file__).resolve().parents[3]
MIN_JUDGED_SHARE = 0.9  # the documented default floor of every comparing step

WORKFLOW = f"""\
extends: {ROOT / "workflows" / "graph-mode-precision.yaml"}
name: qwen2_real_width
model:
  script: {ROOT / "bench" / "qwen2_scale_model.py"}
  args: [--layers, "2", --vocab, "1024", --tokens, "32"]
  backend: inductor
  dtype: bfloat16
  timeout: 900
"""


def test_real_width_clean_model_passes_on_what_was_looked_at(diagnose_bin, tmp_path, inductor_cache):
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, WORKFLOW, env=env, timeout=1800)
    report = json.loads((run_dir / "report.json").read_text())
    steps = {step["id"]: step for step in report["steps"]}
    summary = json.dumps({i: (s["status"], s["summary"]) for i, s in steps.items()}, indent=1)
    assert report["verdict"]["category"] == "no_precision_problem", summary + done.stderr[-2000:]
    assert done.returncode == 0
    assert all(step["status"] in ("pass", "skipped") for step in report["steps"]), summary

    single = steps["single_op"]["metrics"]
    assert single["checked_share"] >= MIN_JUDGED_SHARE, summary
    # one check per distinct signature: the second layer, the first's twin, adds none
    checked = [
        key
        for result in (run_dir / "steps" / "single_op").glob("batch*/out/single_op.json")
        for op in json.loads(result.read_text())["ops"]
        for key in op["op_keys"]
    ]
    assert checked and not [key for key in checked if "layers.1" in key], checked
    for step_id in ("eager_device", "graph_compare"):
        metrics = steps[step_id]["metrics"]
        assert metrics["passed_on_statistics_only"] == 0, summary
        assert metrics["judged"] > 0, summary
    assert report["dump_budget"]["written_bytes"] <= report["dump_budget"]["limit_bytes"]
