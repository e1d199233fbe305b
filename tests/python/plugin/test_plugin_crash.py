"""A run killed with SIGKILL in the middle of dumping leaves a readable partial dump."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import RunConfig, launch
from fixtures.compare_cli import run_compare
from fixtures.dump_reader import read_dump

ENDLESS = str(Path(__file__).resolve().parent / "scripts" / "endless.py")


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory, cache_dir) -> Path:
    """Runs an endless eager loop under the plugin and SIGKILLs it during its third step."""
    config = RunConfig(ENDLESS, {"mode": "eager"})
    proc, run_dir = launch(
        "killed",
        config,
        tmp_path_factory.mktemp("killed"),
        cache_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    manifest = run_dir / "dump" / "manifest.jsonl"
    deadline = time.time() + 240
    try:
        while time.time() < deadline and proc.poll() is None:
            if manifest.exists() and '"step": 2' in manifest.read_text():
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    return run_dir


def test_partial_dump_is_readable(killed_run):
    dump = read_dump(killed_run / "dump")
    assert dump.header is not None and dump.end is None and dump.torn_lines <= 1
    assert len(dump.tensors) > 20 and {0, 1, 2} <= {r["step"] for r in dump.tensors}
    for record in dump.tensors:
        assert list(dump.load(record).shape) == record["shape"]
    status = json.loads((killed_run / "status.json").read_text())
    assert status["state"] == "running" and status["steps"] >= 2


def test_partial_dump_is_readable_by_diagnose_compare(killed_run, diagnose_bin, tmp_path):
    dump = killed_run / "dump"
    run = run_compare(diagnose_bin, dump, dump, tmp_path, timeout=120)
    assert run.rc == 0 and run.result is not None, run.describe()
    result = run.result
    assert result["summary"]["compared"] == len(read_dump(dump).tensors)
    assert any("partial" in w for w in result["summary"]["warnings"]), result["summary"]["warnings"]
