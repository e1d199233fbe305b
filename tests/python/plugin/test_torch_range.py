"""The plugin's check of the environment's torch (torch_range.py): a clear word when it is outside
the supported range, a stop with how to get one when there is none, nothing when it is inside."""

import os
import subprocess
import sys
from pathlib import Path

import diagnose_pytorch
from diagnose_pytorch.torch_range import installed_torch, torch_problem


def test_versions_inside_the_range_say_nothing():
    for version in ("2.5.1", "2.13.0+cpu", "2.14.1", "2.14.0a0+git1234", installed_torch()):
        assert torch_problem(version) is None, version


def test_versions_outside_the_range_are_named_and_the_run_goes_on():
    for version in ("2.4.1", "2.5.0", "2.15.0", "3.0.0+cu130"):
        problem = torch_problem(version)
        assert problem.startswith(f"torch {version} is outside") and "2.5.1 through 2.14" in problem
        assert "the run goes on" in problem


def test_no_torch_stops_the_plugin_with_how_to_get_one(tmp_path):
    # -S: no site-packages, so no torch; the plugin alone on the path.
    plugin_root = Path(diagnose_pytorch.__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-S", "-m", "diagnose_pytorch", "ops", "--from", str(tmp_path)],
        env=dict(os.environ, PYTHONPATH=str(plugin_root)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "no torch in this Python environment" in done.stderr and "pip install" in done.stderr
