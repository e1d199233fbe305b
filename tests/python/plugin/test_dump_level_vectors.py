"""The plugin resolves `dump.level: auto` as tests/vectors/dump_levels.json says; the C++ test
RunSpecVectors holds runspec/run_spec.cc to the same cases (docs/run-spec.md)."""

from __future__ import annotations

import json

import pytest

from diagnose_pytorch.spec import RunSpec
from fixtures.compare_cli import REPO

CASES = json.loads((REPO / "tests" / "vectors" / "dump_levels.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[json.dumps(c["spec"], sort_keys=True) for c in CASES])
def test_the_plugin_resolves_each_dump_level_as_the_vectors_say(case, tmp_path):
    spec = RunSpec.from_dict({"output_dir": str(tmp_path), **case["spec"]})
    assert spec.dump_level() == case["level"]
