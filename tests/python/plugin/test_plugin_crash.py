"""A run killed with SIGKILL in the middle of dumping leaves a readable partial dump."""
import json
import os
import signal
import subprocess
import time

import numpy as np

from conftest import RunConfig, launch
from dump_reader import read_dump

from pathlib import Path

ENDLESS = str(Path(__file__).resolve().parent / "scripts" / "endless.py")


def test_sigkill_leaves_a_readable_partial_dump(tmp_path, cache_dir):
    config = RunConfig(ENDLESS, {"mode": "eager"})
    proc, run_dir = launch("killed", config, tmp_path, cache_dir,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    manifest = run_dir / "dump" / "manifest.jsonl"
    deadline = time.time() + 240
    try:
        while time.time() < deadline and proc.poll() is None:
            if manifest.exists() and manifest.read_text().count('"step": 2') > 0:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    dump = read_dump(run_dir / "dump")
    assert dump.header is not None and dump.end is None and dump.torn_lines <= 1
    assert len(dump.tensors) > 20 and {0, 1, 2} <= {r["step"] for r in dump.tensors}
    for record in dump.tensors:
        assert list(dump.load(record).shape) == record["shape"]
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "running" and status["steps"] >= 2
