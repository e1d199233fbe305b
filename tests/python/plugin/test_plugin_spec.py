"""The run spec: defaults, the levels `auto` resolves to, and loud failures on bad specs."""

import json
import subprocess

import pytest

from conftest import PYTHON, plugin_env
from diagnose_pytorch.spec import RunSpec, SpecError


def test_defaults_and_auto_levels(tmp_path):
    spec = RunSpec.from_dict({"output_dir": str(tmp_path)})
    assert (spec.mode, spec.backend, spec.device, spec.seed) == ("compiled", "inductor", "cpu", 0)
    assert spec.dump.io == ["input", "output"] and spec.dump.final and not spec.dump.stats_only
    levels = {
        (mode, backend): RunSpec.from_dict({"output_dir": "x", "mode": mode, "backend": backend}).dump_level()
        for mode, backend in [
            ("eager", "inductor"),
            ("compiled", "inductor"),
            ("compiled", "torchair"),
            ("compiled", "aot_eager"),
            ("compiled", "eager"),
            ("compiled", "pkg.mod:backend"),
        ]
    }
    assert levels == {
        ("eager", "inductor"): "aten",
        ("compiled", "inductor"): "compiled",
        ("compiled", "torchair"): "compiled",
        ("compiled", "aot_eager"): "fx",
        ("compiled", "eager"): "fx",
        ("compiled", "pkg.mod:backend"): "none",
    }


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"mode": "graph"}, "mode must be"),
        ({"backend": "tvm"}, "backend must be one of"),
        ({"dtype": "int8"}, "dtype must be one of"),
        ({"dump": {"level": "compiled"}, "backend": "aot_eager"}, "use 'fx'"),
        ({"dump": {"level": "fx"}, "mode": "eager"}, "needs mode 'compiled'"),
        ({"dump": {"io": ["inputs"]}}, "dump.io"),
        ({"dump": {"tensor_io": ["inputs"]}}, "dump.tensor_io"),
        ({"dump": {"stats": True}}, "unknown key(s) in dump: stats"),
        ({"tokens": [1]}, "unknown key(s) in spec: tokens"),
        ({"switches": {"fusion_switch_file": "/nonexistent.json"}}, "fusion switch file not found"),
        ({"version": 2}, "version 2 is not supported"),
    ],
)
def test_bad_specs_are_rejected(bad, message):
    with pytest.raises(SpecError) as error:
        RunSpec.from_dict({"output_dir": "x", **bad})
    assert message in str(error.value)


def test_runner_exits_2_on_a_bad_spec_and_runs_nothing(tmp_path, cache_dir):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"output_dir": str(tmp_path / "run"), "backend": "nope"}))
    proc = subprocess.run(
        [PYTHON, "-m", "diagnose_pytorch", "run", "--spec", str(spec), "no_such_script.py"],
        capture_output=True,
        text=True,
        env=plugin_env(cache_dir),
        timeout=120,
    )
    assert proc.returncode == 2
    assert "backend must be one of" in proc.stderr
    assert not (tmp_path / "run").exists()
