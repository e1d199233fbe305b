"""Local multi-rank runs (runner.ranks) with real torch.distributed (gloo on CPU): two diagnoses at
once, each a 2-rank group whose rank 0 serves the rendezvous on its MASTER_PORT; in one of them
rank 1 never reaches the all_reduce, so rank 0 waits in it forever, and the group's timeout kills
both, every rank's log in the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    print("rank", dist.get_rank(), "port", os.environ["MASTER_PORT"], flush=True)
    if sys.argv[1] == "hang" and dist.get_rank() == 1:
        time.sleep(600)
    x = torch.ones(2) * (dist.get_rank() + 1)
    dist.all_reduce(x)
    print("sum", x.tolist(), flush=True)
    dist.destroy_process_group()
    """
)


def start(diagnose_bin: Path, directory: Path, case: str) -> subprocess.Popen:
    directory.mkdir()
    (directory / "ranks.py").write_text(SCRIPT)
    (directory / "wf.yaml").write_text(
        f"model: {{argv: [{sys.executable}, ranks.py, {case}], timeout: 40}}\n"
        "runner: {ranks: 2}\ndefaults: {kill_grace: 1}\nsteps: [{id: model, kind: run}]\n"
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [str(diagnose_bin), "wf.yaml", "--quiet"], cwd=directory, env=env, stdout=subprocess.PIPE, text=True
    )


def run_of(directory: Path) -> tuple[dict, dict]:
    (run_dir,) = (p for p in (directory / "runs").iterdir() if p.is_dir())
    step = json.loads((run_dir / "report.json").read_text())["steps"][0]
    return step, step["runs"][0]


def test_two_rank_groups_at_once_and_a_hang_in_a_collective(diagnose_bin, tmp_path):
    clean, hang = start(diagnose_bin, tmp_path / "clean", "clean"), start(diagnose_bin, tmp_path / "hang", "hang")
    assert clean.wait(timeout=300) == 0 and hang.wait(timeout=300) == 3

    _, run = run_of(tmp_path / "clean")
    texts = [Path(run["stdout"]).with_name(f"stdout_rank{r}.log").read_text() for r in (0, 1)]
    assert [t.splitlines()[-1] for t in texts] == ["sum [3.0, 3.0]"] * 2, texts
    port = texts[0].split()[3]

    step, run = run_of(tmp_path / "hang")
    assert run["status"] == "timed_out", run
    assert "rank 0: still running at the timeout; rank 1: still running at the timeout" in run["error"], run["error"]
    tails = {e["name"]: e["value"] for e in step["evidence"] if e["kind"] == "log"}
    assert tails["main rank 0 stdout (last lines)"].startswith("rank 0 port "), tails
    assert tails["main rank 1 stdout (last lines)"].startswith("rank 1 port "), tails
    assert tails["main rank 0 stdout (last lines)"].split()[3] != port  # the other group's port
