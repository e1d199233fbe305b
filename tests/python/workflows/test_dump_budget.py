"""The dump budget of a diagnosis (defaults.dump_budget, orchestrator/engine/dump_budget.h): the
runs the steps plan that keep tensors share it evenly as their dump.max_bytes; past its share a
dump keeps statistics only, and the verdict, report.json, report.md and report.html say what was
left out. The same workflow within the default budget keeps every tensor and passes; under a budget
that leaves most rows to statistics it does not pass (rows passing on statistics alone are no
element-wise test). graph_dump_compare's golden keeps its inputs' statistics only against
Inductor's buffers. The whole run directory is measured against the budget, equal tensor files of
the runs (the target's final outputs, dumped and undumped) stored once as hard links. The op-by-op
pass is what these budgets bound: `localisation: ops`, which `auto` would not choose under so small
a budget (module outputs first, tests/steps' GraphDumpCompareLocalisationAuto...)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fixtures.dump_reader import read_dump
from fixtures.workflow_run import run_workflow

MODEL = """\
import torch

torch.manual_seed(0)
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)))
model(torch.randn(16, 64))
"""

WORKFLOW = """\
name: dump_budget
model: {script: model.py, backend: inductor, device: cpu}
%s
steps:
  - id: graph_compare
    kind: graph_dump_compare
    referee: true
    localisation: ops
"""


def diagnose(diagnose_bin, directory, inductor_cache, defaults=""):
    directory.mkdir()
    (directory / "model.py").write_text(MODEL)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, directory, WORKFLOW % defaults, env=env, timeout=300)
    return done, run_dir, json.loads((run_dir / "report.json").read_text())


def test_a_budget_reached_is_said_and_statistics_alone_are_no_pass(diagnose_bin, tmp_path, inductor_cache):
    done, run_dir, report = diagnose(diagnose_bin, tmp_path / "whole", inductor_cache)
    (step,) = report["steps"]
    assert step["status"] == "pass", done.stderr[-3000:]
    budget = report["dump_budget"]
    assert (budget["limit_bytes"], budget["runs"], budget["per_run_bytes"]) == (1 << 30, 2, 1 << 29)
    assert budget["left_out"] == [] and budget["written_bytes"] > 0
    assert step["metrics"]["statistics_only_over_budget"] == 0
    assert "statistics only" not in report["verdict"]["summary"]
    assert "Every record kept its tensor." in (run_dir / "report.md").read_text()
    for side in ("golden", "target"):
        spec = json.loads((run_dir / f"steps/graph_compare/{side}/spec.json").read_text())
        assert spec["dump"]["max_bytes"] == 1 << 29
    golden = read_dump(run_dir / "steps/graph_compare/golden/dump")
    inputs = [r for r in golden.tensors if r["io"] == "input"]
    assert inputs and all(r["not_kept"] == "stats_only" and "stats" in r for r in inputs)
    # the whole run directory against the budget, equal tensor files stored once
    usage = budget["run_directory"]
    assert usage["bytes"] == usage["dumps_bytes"] + usage["outputs_bytes"] + usage["other_bytes"]
    assert 0 < usage["bytes"] <= budget["limit_bytes"] and usage["outputs_bytes"] > 0
    assert "): within the budget." in (run_dir / "report.md").read_text()
    files_by_content = {}
    for manifest in sorted(run_dir.glob("steps/*/*/*/manifest.jsonl")):
        for record in read_dump(manifest.parent).tensors:
            if "file" in record:
                content = (record["dtype"], tuple(record["shape"]), record["stats"]["hash"])
                files_by_content.setdefault(content, set()).add(manifest.parent / record["file"])
    shared = [files for files in files_by_content.values() if len(files) > 1]
    assert shared and usage["linked_files"] > 0  # the target's outputs, dumped and undumped, at least
    for files in shared:
        first = min(files)
        assert all(os.path.samefile(first, other) for other in files), files

    small = "defaults: {dump_budget: 16384}"
    done, run_dir, bounded = diagnose(diagnose_bin, tmp_path / "bounded", inductor_cache, small)
    (step,) = bounded["steps"]
    budget = bounded["dump_budget"]
    assert (budget["limit_bytes"], budget["runs"], budget["per_run_bytes"]) == (16384, 2, 8192)
    left_out = {entry["run"]: entry for entry in budget["left_out"]}
    assert set(left_out) == {"golden", "target"}
    for entry in left_out.values():
        assert entry["limit_bytes"] == 8192 and entry["written_bytes"] <= 8192 and entry["records"] > 0
    rows = step["metrics"]["statistics_only_over_budget"]
    passed = step["metrics"]["passed_on_statistics_only"]
    assert 0 < passed <= rows
    # most rows passed on their statistics alone: too little was judged element-wise to pass
    assert step["status"] == "error", done.stderr[-3000:]
    assert f"{passed} rows passing on their statistics alone; min_judged_share is 0.9)" in step["summary"]
    assert bounded["verdict"]["category"] == "inconclusive"
    assert bounded["verdict"]["summary"].endswith(
        "; rows judged on statistics only, the dump budget being reached "
        f"(defaults.dump_budget): {rows} in step 'graph_compare'"
    )
    markdown = (run_dir / "report.md").read_text()
    assert "## Dump budget" in markdown and "The budget was reached" in markdown
    assert "At most 16384 bytes of tensor files for this diagnosis" in markdown
    # the final outputs, kept whole, are outside the op dumps' shares: said, not hidden
    assert bounded["dump_budget"]["run_directory"]["bytes"] > 16384
    assert "over the budget, the final outputs of every run being kept whole outside" in markdown
    assert "| golden | graph_compare |" in markdown
    assert 'id="dump-budget"' in (run_dir / "report.html").read_text()


GRAPH_PASS_DEFECT = Path(__file__).resolve().parents[3] / "examples" / "graph_pass_defect" / "model.py"

BOUNDED_DEFECT = f"""\
name: targeted_rerun
model: {{script: {GRAPH_PASS_DEFECT}, backend: "graph_pass_backend:backend", device: cpu}}
defaults: {{dump_budget: 2048}}
steps:
  - id: graph_compare
    kind: graph_dump_compare
    referee: true
    localisation: ops
"""


def test_failing_rows_past_the_budget_get_their_tensors_from_a_targeted_rerun(diagnose_bin, tmp_path, inductor_cache):
    """examples/graph_pass_defect under a budget that leaves the culprit's buffer (mul, where the
    error starts) to statistics on both sides: a re-run of each side dumping only the failing ops
    fills it in, and the culprit is judged on its tensors against its float64 truth, as with
    every tensor kept (the example's README)."""
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, BOUNDED_DEFECT, env=env, timeout=300)
    report = json.loads((run_dir / "report.json").read_text())
    (step,) = report["steps"]
    assert step["status"] == "fail", done.stderr[-3000:]
    metrics = step["metrics"]
    assert metrics["culprit"] == "mul-aten.mul.Tensor"
    assert metrics["culprit_nodes"] == ["mean", "sub", "mul"]
    rerun = metrics["targeted_rerun"]
    assert rerun["ops"][0] == "mul-aten.mul.Tensor" and "output" not in rerun["ops"]
    assert rerun["runs"] == ["golden_region", "target_region"]
    assert rerun["filled"] >= 2 and rerun["differed"] == 0 and rerun["problems"] == []
    for side in ("golden", "target"):
        spec = json.loads((run_dir / f"steps/graph_compare/{side}_region/spec.json").read_text())
        assert spec["dump"]["include"] == [r"^mul\-aten\.mul\.Tensor$", *spec["dump"]["include"][1:]]
        (mul,) = [
            r
            for r in read_dump(run_dir / f"steps/graph_compare/{side}/dump").tensors
            if r["op_key"] == "mul-aten.mul.Tensor" and r["io"] == "output"
        ]
        assert "not_kept" not in mul and (run_dir / f"steps/graph_compare/{side}/dump" / mul["file"]).is_file()
    # judged on the tensors and their truth, no longer on statistics
    assert "rmse to float64" in step["findings"][0]["message"]
    assert any(f["message"].startswith("targeted re-run") for f in step["findings"])
