"""`python -m diagnose_pytorch script-backend SCRIPT [ARGS]`: the backend object a script passes
to its first torch.compile call, as the `module:function` name a run spec takes, so that
`diagnose check` runs a script with its own backend without the user naming it. The script runs
as `python SCRIPT ARGS` would, up to its first call of what torch.compile returned.

Prints one JSON line: {"backend": "fusion_backend:backend"}; {"backend": null, "why": ...} when
the script passes none, a builtin's name, or an object no `module:function` name gives back (a
lambda, a closure, a callable instance)."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys

from ..main_script import _FirstCompiledCall, _until_called, compile_redirected, run_as_main


def backend_name(backend, script: str) -> tuple[str | None, str]:
    """The `module:function` name resolving to `backend` in a model run, or None and why not."""
    if backend is None:
        return None, "the script passes no backend"
    if isinstance(backend, str):
        return None, f"the script passes backend {backend!r}"
    module, qualname = getattr(backend, "__module__", None), getattr(backend, "__qualname__", None)
    if not module or not qualname or "." in qualname or "<" in qualname:
        return None, f"the script's backend {backend!r} is not a module-level function"
    if module == "__main__":
        module = os.path.splitext(os.path.basename(script))[0]
        owner = sys.modules["__main__"]
    else:
        owner = importlib.import_module(module)
    if getattr(owner, qualname, None) is not backend:
        return None, f"{module}:{qualname} does not name the script's backend {backend!r}"
    return f"{module}:{qualname}", ""


def script_backend(script: str, args: list[str]) -> dict:
    requested: list = []
    reached: list = []

    def until_called(model, options):
        requested.append(options.get("backend"))
        return _until_called(model, reached)

    try:  # what the script prints goes to stderr: stdout holds the answer alone
        with compile_redirected(until_called), contextlib.redirect_stdout(sys.stderr):
            run_as_main(script, args)
    except _FirstCompiledCall:
        pass
    except (Exception, SystemExit) as e:  # noqa: BLE001 — the script's own failure: the run reports it
        if not requested:
            return {"backend": None, "why": f"the script ended before calling torch.compile ({type(e).__name__})"}
    if not requested:
        return {"backend": None, "why": "the script calls no torch.compile"}
    name, why = backend_name(requested[0], script)
    return {"backend": name, "why": why} if name is None else {"backend": name}


def main(script: str, args: list[str]) -> int:
    print(json.dumps(script_backend(script, args)), flush=True)
    return 0
