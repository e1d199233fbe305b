"""Zero code change: run an unmodified script under the run spec. The script's
`torch.compile` calls (and `nn.Module.compile`, which goes through `torch.compile`) are
redirected to the spec's mode, backend and options."""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback

import torch

from . import entry
from .session import Session
from .spec import RunSpec


def redirected_compile(session: Session):
    def compile(model=None, **options):
        if model is None:
            return lambda fn: entry.compile_under_spec(session, fn, options)
        return entry.compile_under_spec(session, model, options)

    return compile


@contextlib.contextmanager
def compile_redirected(session: Session):
    original = torch.compile
    torch.compile = redirected_compile(session)
    try:
        yield
    finally:
        torch.compile = original


def run_script(spec: RunSpec, script: str, args: list[str]) -> int:
    """Runs `script` as __main__ with `args` as its argv; returns the exit code."""
    session = Session(spec)
    session.status.update("ran", script=script, script_args=list(args))
    error = None
    code = 0
    sys.argv = [script, *args]
    # as `python script.py` does: the script's directory comes first on the import path
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with compile_redirected(session):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if code:
            error = exit_
    except BaseException as exc:  # the status file must say what went wrong, whatever it was
        error = exc
        code = 1
    session.status.set("exit_code", code)
    session.close(error)
    if error is not None and not isinstance(error, SystemExit):
        traceback.print_exception(type(error), error, error.__traceback__)
    return code
