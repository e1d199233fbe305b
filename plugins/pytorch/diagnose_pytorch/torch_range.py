"""The torch versions the plugin supports: 2.5.1 through 2.14 (pyproject.toml's torch>=2.5.1,<2.15).
The `diagnose` wheel brings no torch, so that the plugin runs on the torch the environment has;
this says before a run when that torch is outside the range (the run goes on: what it lacks is
probed and reported, compat.py) or when there is none (the run cannot start). Reads the installed
version without importing torch."""

from __future__ import annotations

import re
import sys
from importlib import metadata

LOWEST = (2, 5, 1)
BELOW = (2, 15)
RANGE = "2.5.1 through 2.14"


def release(version: str) -> tuple[int, ...] | None:
    """The numeric release of a version string ("2.13.0+cpu" -> (2, 13, 0)); None when it has none."""
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


def torch_problem(version: str | None) -> str | None:
    """What to say about the environment's torch (None: it has none), or None when it is supported."""
    if version is None:
        return (
            f"no torch in this Python environment ({sys.executable}): install one from {RANGE} "
            f"(pip install 'torch>=2.5.1,<2.15'), or the torch_npu build your NPU needs"
        )
    numbers = release(version)
    if numbers is None or LOWEST <= numbers < BELOW:
        return None
    return (
        f"torch {version} is outside the versions this plugin supports ({RANGE}): the run goes on, "
        "every torch feature it uses is probed and those missing are listed in status.json's features, "
        "but its results on this torch are not tested"
    )


def installed_torch() -> str | None:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
