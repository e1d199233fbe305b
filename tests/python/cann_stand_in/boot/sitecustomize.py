"""Installs the CANN stand-in (tests/python/cann_stand_in) in every Python process that has this
directory on PYTHONPATH, before anything imports torchair."""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # tests/python: cann_stand_in, fixtures

import cann_stand_in  # noqa: E402

cann_stand_in.install()
