"""pytest fixtures shared by every test directory (the diagnose binary, the Inductor cache)
and their pytest-xdist groups; the helpers live in fixtures/ (tests import them from there:
a sibling conftest.py elsewhere shares the module name)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fixtures.compare_cli import find_binary  # noqa: E402


@pytest.fixture(scope="session")
def diagnose_bin() -> Path:
    path = find_binary()
    if path is None or not path.exists():
        pytest.fail(
            "diagnose binary not found: build it (cmake --build build --target diagnose) or set DIAGNOSE_BIN",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def inductor_cache(tmp_path_factory) -> Path:
    """Inductor's cache for the model runs: one per worker, or the directory the test command
    shares between its workers (DIAGNOSE_TEST_INDUCTOR_CACHE), so that a graph compiled by one
    test file is a cache hit for the others (Inductor writes its cache atomically)."""
    shared = os.environ.get("DIAGNOSE_TEST_INDUCTOR_CACHE")
    if shared:
        Path(shared).mkdir(parents=True, exist_ok=True)
        return Path(shared)
    return tmp_path_factory.mktemp("inductor-cache")


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "out"


# Sessions sharing model runs: their tests stay on one pytest-xdist worker, so those runs
# happen once. Every other test file is a group of its own (its module fixtures run once),
# except files whose tests share nothing: each of their tests goes to whichever worker is free.
SHARED_RUN_DIRS = ("examples", "plugin")
INDEPENDENT_TEST_DIRS = ("workflows",)
# The independent tests' seconds in a CI run (those of 5 s or more, from its JUnit file
# build/test-results/pytest.xml): the slowest start first, so that the two workers end together.
# pytest-xdist queues up to three tests on a worker, and in collection order a slow one came last:
# the other worker then sat idle, about 80 s of the 1750 s run. A test not listed counts as quick;
# a stale figure only changes the order.
DURATIONS = json.loads((HERE / "durations.json").read_text())


# Tests that run a model (a diagnosis, or the plugin on a model), marked e2e: folders and files,
# and every test that reads the plugin tests' shared runs. `scripts/test.sh --quick` runs the
# tests that are not, and the one diagnosis marked quick.
END_TO_END_PATHS = (
    "bisect",
    "examples",
    "gate/test_gate.py",
    "plugin/test_isolation.py",
    "plugin/test_plugin_crash.py",
    "report",
    "workflows",
)
QUICK_DIAGNOSIS = "test_standard_workflow_finds_the_planted_cause[forgotten_eval]"


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: runs a model (a diagnosis, or the plugin on a model)")
    config.addinivalue_line("markers", "quick: the one diagnosis scripts/test.sh --quick runs")


def end_to_end(item, relative: Path) -> bool:
    path = relative.as_posix()
    in_paths = any(path == p or path.startswith(p + "/") for p in END_TO_END_PATHS)
    return in_paths or "plugin_runs" in item.fixturenames


# First: pytest-xdist reads the groups in its own hook of the same name.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    def seconds(item) -> int:
        relative = Path(str(item.fspath)).resolve().relative_to(HERE)
        independent = relative.parts[0] in INDEPENDENT_TEST_DIRS
        return DURATIONS.get(f"{relative.as_posix()}::{item.name}", 0) if independent else 0

    items.sort(key=seconds, reverse=True)  # stable: the others keep their order
    for item in items:
        relative = Path(str(item.fspath)).resolve().relative_to(HERE)
        if end_to_end(item, relative):
            item.add_marker(pytest.mark.e2e)
        if item.name == QUICK_DIAGNOSIS:
            item.add_marker(pytest.mark.quick)
        if relative.parts[0] in INDEPENDENT_TEST_DIRS:
            continue
        group = relative.parts[0] if relative.parts[0] in SHARED_RUN_DIRS else relative.as_posix()
        item.add_marker(pytest.mark.xdist_group(group))
