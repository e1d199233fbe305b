"""pytest fixtures for the compare tests; the helpers live in fixtures/compare_cli.py
(tests import them from there: a sibling conftest.py elsewhere shares the module name)."""
from __future__ import annotations

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
        pytest.fail("diagnose binary not found: build it (cmake --build build --target diagnose) "
                    "or set DIAGNOSE_BIN", pytrace=False)
    return path


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "out"
