"""The slurm runner against a real one-node cluster (tests/slurm/cluster.sh, started by
tests/slurm/run.sh). Without a reachable cluster every test fails: this suite is not
collected by the plain pytest stage and must never pass by skipping."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "support" / "scripts" / "model.py"
PYTHON = sys.executable


def slurm(*args: str) -> str:
    return subprocess.run(list(args), check=True, capture_output=True, text=True, timeout=30).stdout


@pytest.fixture(scope="session")
def cluster() -> dict:
    conf = os.environ.get("SLURM_CONF")
    if not conf or not Path(conf).is_file():
        pytest.fail("SLURM_CONF names no slurm.conf: start the test cluster with tests/slurm/run.sh", pytrace=False)
    try:
        partitions = slurm("sinfo", "-h", "-o", "%P")
    except (OSError, subprocess.SubprocessError) as e:
        pytest.fail(f"the test cluster does not answer: {e}", pytrace=False)
    jobcomp = re.search(r"^JobCompLoc=(.*)$", Path(conf).read_text(), re.M).group(1)
    return {"conf": conf, "partition": partitions.split()[0].rstrip("*"), "jobcomp": Path(jobcomp)}


@pytest.fixture(scope="session")
def diagnose_bin() -> Path:
    path = Path(os.environ.get("DIAGNOSE_BIN", ROOT / "build" / "cli" / "diagnose"))
    if not path.exists():
        pytest.fail(f"diagnose binary not found at {path}: build it or set DIAGNOSE_BIN", pytrace=False)
    return path


def write_workflow(directory: Path, text: str, runner: dict | None = None) -> Path:
    """`text` (dedented) plus a top-level runner section with these keys (JSON is YAML)."""
    path = directory / "wf.yaml"
    path.write_text(textwrap.dedent(text) + ("" if runner is None else "runner: " + json.dumps(runner) + "\n"))
    return path


def slurm_runner(cluster: dict, **extra) -> dict:
    return {"kind": "slurm", "partition": cluster["partition"], "poll_interval": 0.3, **extra}


def run_diagnose(binary: Path, cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def start_diagnose():
    """Starts diagnose in the background; one a failing test left running is stopped with
    SIGINT (which cancels its jobs) when the test ends."""
    started = []

    def start(binary: Path, cwd: Path, *args: str) -> subprocess.Popen:
        process = subprocess.Popen(
            [str(binary), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=60)


def only_run_dir(cwd: Path) -> Path:
    found = [p for p in (cwd / "runs").iterdir() if p.is_dir()]
    assert len(found) == 1, found
    return found[0]


def read_state(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())


def runs_of(run_dir: Path, step: str) -> list[dict]:
    return next(s for s in read_state(run_dir)["steps"] if s["id"] == step)["runs"]


def jobs() -> list[dict]:
    """Every job the controller remembers (MinJobAge keeps finished ones), as field maps."""
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, timeout=30).stdout
    found = []
    for line in out.splitlines():
        fields = dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", line))
        if "JobId" in fields:
            found.append(fields)
    return found


def jobs_named(name: str, workdir: Path) -> list[dict]:
    """Jobs with this name started in `workdir` (the cluster may be older than the test)."""
    return [j for j in jobs() if j.get("JobName") == name and j.get("WorkDir") == str(workdir)]


def queued_ids() -> set[str]:
    """Jobs still pending, running or completing."""
    return set(slurm("squeue", "-h", "-o", "%i").split())


def wait_for(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def stop(process: subprocess.Popen, sig: int) -> tuple[int, str, str]:
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


@pytest.fixture(scope="session", autouse=True)
def time_limit_run(cluster, diagnose_bin, tmp_path_factory):
    """Slurm enforces time limits in whole minutes, checked every 30 s: the run that hits
    its limit starts with the session and is checked by the last test."""
    directory = tmp_path_factory.mktemp("time-limit")
    write_workflow(
        directory,
        f"""\
        name: time-limit
        model:
          argv: [{PYTHON}, -c, "import time; print('sleeping', flush=True); time.sleep(600)"]
          timeout: 60
        steps:
          - id: sleeper
            kind: run
        """,
        slurm_runner(cluster),
    )
    started = time.monotonic()
    process = subprocess.Popen(
        [str(diagnose_bin), "wf.yaml"], cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    yield {"process": process, "dir": directory, "started": started}
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
