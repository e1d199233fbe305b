"""How helper processes run the model script (diagnose_pytorch/main_script.py): as the recorded run
did, up to its first compiled call, for guarded and unguarded scripts alike; and when the script
cannot get there, an error saying what happened and what to do, which the single-op command
reports (exit 2, progress.jsonl's setup_failed event) instead of checking nothing silently.
Each test is one real subprocess (a helper's state: the script as __main__, its custom ops)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYTHON = sys.executable

UNGUARDED = """\
import argparse, os
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--case", required=True)
args = parser.parse_args()
assert open("input.txt").read() == "in the run's cwd"

@torch.library.custom_op("main_script_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2

@twice.register_fake
def _(x):
    return torch.empty_like(x)

def backend(gm, example_inputs):
    return gm.forward

@torch.compile
def step(x):
    return twice(x)

try:
    step(torch.ones(2))
except Exception:
    raise SystemExit("an `except Exception` caught the take-over")
open("after.txt", "w").write("the program went on after its first compiled call")
"""

# A guarded script that registers inside main(), compiles a module, and catches everything.
GUARDED = """\
import sys
import torch

def main():
    torch.library.define("main_script_guarded::id", "(Tensor x) -> Tensor")
    torch.library.impl("main_script_guarded::id", "CompositeExplicitAutograd", lambda x: x.clone())
    model = torch.nn.Linear(2, 2)
    model.compile()
    try:
        model(torch.ones(2))
    except:  # noqa: E722 — the bare except of a script that exits its own way
        sys.exit(1)
    open("after.txt", "w").write("ran on")

if __name__ == "__main__":
    main()
"""

HELPER = """\
import json, os, sys, torch
from diagnose_pytorch.backends.spec_backend import resolve
from diagnose_pytorch.main_script import ScriptSetupError, run_until_first_compiled_call
original_compile, cwd = torch.compile, os.getcwd()
results = {}
for name, ran in json.loads(sys.argv[1]).items():
    try:
        module = run_until_first_compiled_call(ran, "the test helper")
        results[name] = {"module_file": module.__file__}
    except ScriptSetupError as e:
        results[name] = {"error": str(e)}
    results[name].update(cwd_kept=os.getcwd() == cwd, compile_kept=torch.compile is original_compile)
if "unguarded" in results:
    results["unguarded"]["op"] = torch.ops.main_script_test.twice(torch.ones(1)).item()
    results["unguarded"]["backend_is_the_scripts"] = resolve("unguarded:backend") is sys.modules["__main__"].backend
if "guarded" in results:
    results["guarded"]["op"] = torch.ops.main_script_guarded.id(torch.ones(1)).item()
print(json.dumps(results))
"""


def helper(tmp_path: Path, runs: dict) -> dict:
    done = subprocess.run(
        [PYTHON, "-c", HELPER, json.dumps(runs)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def script(directory: Path, name: str, text: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(textwrap.dedent(text))
    return str(directory / name)


def test_guarded_and_unguarded_scripts_run_up_to_their_first_compiled_call(tmp_path):
    run_cwd = tmp_path / "run_cwd"
    run_cwd.mkdir()
    (run_cwd / "input.txt").write_text("in the run's cwd")
    runs = {  # the unguarded last: `unguarded:backend` resolves to the script that ran last
        "guarded": {"script": script(tmp_path / "g", "guarded.py", GUARDED), "script_args": []},
        "unguarded": {"script": script(tmp_path / "s", "unguarded.py", UNGUARDED), "script_args": ["--case", "a"]},
    }
    for ran in runs.values():
        ran["cwd"] = str(run_cwd)
    results = helper(tmp_path, runs)
    for name, result in results.items():
        assert "error" not in result, result
        assert result["module_file"] == runs[name]["script"] and result["cwd_kept"] and result["compile_kept"]
    assert results["unguarded"]["op"] == 2.0 and results["unguarded"]["backend_is_the_scripts"]
    assert results["guarded"]["op"] == 1.0
    assert not (run_cwd / "after.txt").exists()


def test_a_script_that_does_not_reach_a_compiled_call_says_what_happened(tmp_path):
    scripts = {
        "exits": "import argparse\nargparse.ArgumentParser().add_argument('--case', required=True)\n"
        "argparse.ArgumentParser(prog='exits.py').parse_args(['--nope'])\n",
        "raises": "import os\n\nos.environ['MODEL_CASE']\n",
        "no_compile": "print('ran eagerly')\n",
        "message": "import sys\nsys.exit('no data here')\n",
    }
    runs = {
        name: {"script": script(tmp_path, f"{name}.py", text), "script_args": ["--flag"], "cwd": str(tmp_path)}
        for name, text in scripts.items()
    }
    runs["gone"] = {"script": str(tmp_path / "gone.py"), "cwd": str(tmp_path)}
    results = {name: result["error"] for name, result in helper(tmp_path, runs).items()}
    assert results.pop("gone").endswith(f"but {tmp_path}/gone.py no longer exists")
    assert results["exits"].startswith("exits.py exited with status 2 before its first compiled call")
    assert "unrecognized arguments: --nope" in results["exits"]
    assert results["raises"].startswith("raises.py raised KeyError: 'MODEL_CASE' at raises.py:3 before")
    assert results["no_compile"].startswith("no_compile.py ended (exit status 0) without calling a torch.compile'd")
    assert results["message"].startswith("message.py exited with status 1") and "no data here" in results["message"]
    for error in results.values():
        assert f"(cd {tmp_path} && python {tmp_path}/" in error and " --flag)" in error  # the command to try
        assert "The test helper runs the script as the eager run did" in error


def test_the_single_op_command_reports_a_script_that_exits_before_its_compiled_call(tmp_path):
    """An unguarded script whose required argument the run's record lacks: exit 2, and the
    message on stderr, in progress.jsonl (what single_op_check's summary quotes) and status.json."""
    run_dir = tmp_path / "eager"
    (run_dir / "dump").mkdir(parents=True)
    (run_dir / "dump" / "manifest.jsonl").write_text(json.dumps({"type": "header", "level": "aten"}) + "\n")
    model = script(tmp_path, "model.py", UNGUARDED)
    (run_dir / "status.json").write_text(
        json.dumps({"ran": {"script": model, "script_args": [], "cwd": str(tmp_path)}})
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "diagnose_pytorch",
            "single-op",
            "--from",
            str(run_dir),
            "--out",
            str(out),
            "--backend",
            "eager",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    expected = "model.py exited with status 2 before its first compiled call; its last stderr lines: usage: model.py"
    assert f"diagnose_pytorch single-op: {expected}" in done.stderr
    (event,) = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert event["event"] == "setup_failed" and event["message"].startswith(expected)
    assert "the following arguments are required: --case" in event["message"]
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "error" and status["errors"][0]["where"] == "setup"


def test_repro_py_says_when_its_backends_module_runs_a_program_on_import(tmp_path, monkeypatch):
    """repro.py (repro_check.py's runtime) imports a `module:function` backend: an unguarded
    script as that module exits on import, and repro.py says why instead of the script's usage."""
    from diagnose_pytorch.checks.repro_check import backend_named

    script(tmp_path, "unguarded_backend.py", "import argparse\nargparse.ArgumentParser().parse_args(['--case'])\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        backend_named("unguarded_backend:backend", {})
    assert str(exited.value.code).startswith("importing unguarded_backend, the backend's module, exited (status 2)")
    assert "Move the backend into a module of its own, or pass --backend." in str(exited.value.code)
