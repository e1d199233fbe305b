"""Zero code change: run an unmodified script under the run spec. The script's
`torch.compile` calls (and `nn.Module.compile`, which goes through `torch.compile`) are
redirected to the spec's mode, backend and options."""

from __future__ import annotations

import functools
import os
import traceback

from ..main_script import compile_redirected, exit_status, run_as_main
from ..spec import RunSpec
from . import entry
from .session import Session


def run_script(spec: RunSpec, script: str, args: list[str]) -> int:
    """Runs `script` as __main__ with `args` as its argv; returns the exit code."""
    session = Session(spec)
    # what a helper process needs to run the script as this run did (main_script.py)
    session.status.record_ran(script=script, script_args=list(args), cwd=os.getcwd())
    error = None
    code = 0
    try:
        with compile_redirected(functools.partial(entry.compile_under_spec, session)):
            run_as_main(script, args)
    except SystemExit as exit_:
        code = exit_status(exit_)
        if code:
            error = exit_
    except BaseException as exc:  # the status file must say what went wrong, whatever it was
        error = exc
        code = 1
    session.status.record_exit_code(code)
    session.close(error)
    if error is not None and not isinstance(error, SystemExit):
        traceback.print_exception(type(error), error, error.__traceback__)
    return code
