"""runtime/script_backend.py: the backend object a script passes to torch.compile, named as a
run spec names it (`module:function`), or why it cannot be."""

from __future__ import annotations

import json
import os
import subprocess

from conftest import PYTHON, REPO
from diagnose_pytorch.runtime.script_backend import backend_name


def module_level_backend(gm, example_inputs):
    return gm.forward


def test_a_module_level_function_is_named_by_its_module():
    name, why = backend_name(module_level_backend, "model.py")
    assert name == f"{__name__}:module_level_backend" and why == ""


def test_what_no_name_gives_back_is_said():
    assert backend_name(None, "model.py") == (None, "the script passes no backend")
    assert backend_name("aot_eager", "model.py") == (None, "the script passes backend 'aot_eager'")
    name, why = backend_name(lambda gm, inputs: gm.forward, "model.py")
    assert name is None and "not a module-level function" in why


def test_a_script_run_up_to_its_first_compiled_call(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(
        "import torch\n"
        "def my_backend(gm, example_inputs):\n"
        "    return gm.forward\n"
        "print('the script prints')\n"
        "f = torch.compile(lambda x: x + 1, backend=my_backend)\n"
        "f(torch.ones(2))\n"
        "raise SystemExit('never reached')\n"
    )
    done = subprocess.run(
        [PYTHON, "-m", "diagnose_pytorch", "script-backend", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "plugins" / "pytorch")},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"backend": "model:my_backend"} and "the script prints" in done.stderr
