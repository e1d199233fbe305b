"""bench/compare_bench.py --quick runs end to end, and diagnose's numbers on its data agree
with the numpy baseline. Speed targets are printed, not asserted (shared CI machines)."""

from __future__ import annotations

import subprocess
import sys

from fixtures.compare_cli import REPO


def test_bench_quick(diagnose_bin, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "compare_bench.py"),
            "--quick",
            "--bin",
            str(diagnose_bin),
            "--dir",
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "metrics agree with numpy (1e-3 rel): yes" in out, out
    for line in ("plain pass", "numpy (load", "diagnose compare", "diagnose / numpy", "peak RSS"):
        assert line in out, out
