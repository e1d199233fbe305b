"""The model script as every process that needs it runs it: as `python SCRIPT ARGS` would (module
__main__, that argv, its directory first on sys.path), with `torch.compile` redirected.

The model run (runner.py) runs it to its end. A helper process (the single-op check) needs what
the script defines (custom ops, a user backend, torch and Inductor settings), not its program:
it runs the script as the recorded run did (its arguments and working directory) up to the
script's first compiled call, which unwinds the script. So a script whose program sits at top
level (argument parsing, the model's run) works as well as one with a `__main__` guard, and
every registration the script makes before its first compiled call exists in the helper."""

from __future__ import annotations

import builtins
import collections
import contextlib
import functools
import importlib.machinery
import os
import shlex
import sys
import traceback
import types

import torch


class ScriptSetupError(RuntimeError):
    """The script did not reach its first compiled call: what happened and what to do."""


def exit_status(exit_: SystemExit) -> int:
    """The process's exit status for `sys.exit(code)`, as Python gives it: None is 0, an int
    itself, anything else (a message) 1."""
    if exit_.code is None:
        return 0
    return exit_.code if isinstance(exit_.code, int) else 1


@contextlib.contextmanager
def compile_redirected(compile_under):
    """`torch.compile(model, **options)` (and `nn.Module.compile`, which calls it) returns
    `compile_under(model, options)`; the decorator form `torch.compile(**options)` too."""
    original = torch.compile

    def compile(model=None, **options):
        if model is None:
            return lambda fn: compile_under(fn, options)
        return compile_under(model, options)

    torch.compile = compile
    try:
        yield
    finally:
        torch.compile = original


def run_as_main(script: str, args: list[str]) -> types.ModuleType:
    """Runs `script` as module __main__, which stays in sys.modules (as `python script` leaves
    it, so that `module:function` names of the script resolve to it: backends.resolve)."""
    module = types.ModuleType("__main__")
    module.__file__ = script
    module.__builtins__ = builtins
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    sys.modules["__main__"] = module
    with open(script, "rb") as f:
        code = compile(f.read(), script, "exec")
    exec(code, module.__dict__)
    return module


class _FirstCompiledCall(BaseException):
    """Unwinds the script at its first compiled call (not an Exception: the script's own
    `except Exception` handlers let it through)."""


def _until_called(model, reached: list):
    """What torch.compile returns in a helper: the model, which unwinds the script when called."""

    def take_over(*args, **kwargs):
        reached.append(True)
        raise _FirstCompiledCall

    if isinstance(model, torch.nn.Module):
        model.register_forward_pre_hook(lambda module, args: take_over())
        return model
    return functools.wraps(model)(take_over)


class _StderrTail:
    """sys.stderr as it is, keeping its last lines for an error message."""

    def __init__(self, stream, lines: int = 8):
        self.stream = stream
        self.lines = collections.deque(maxlen=lines)
        self.partial = ""

    def write(self, text: str) -> int:
        *complete, self.partial = (self.partial + text).split("\n")
        self.lines.extend(line for line in complete if line.strip())
        return self.stream.write(text)

    def last_lines(self) -> list[str]:
        lines = [*self.lines, self.partial] if self.partial.strip() else list(self.lines)
        return lines[-self.lines.maxlen :]

    def __getattr__(self, name):
        return getattr(self.stream, name)


def run_until_first_compiled_call(ran: dict, helper: str) -> types.ModuleType | None:
    """Runs the script of a recorded run (status.json's `ran`: script, script_args, cwd) the way
    that run did, until its first compiled call. Returns the script's module; None when the
    run recorded no script (the explicit API). Raises ScriptSetupError when the script exits,
    raises or ends before any compiled call. `helper` names the process in that error."""
    if not ran.get("script"):
        return None
    cwd = ran.get("cwd") or os.getcwd()
    script = os.path.join(cwd, ran["script"])
    args = [str(a) for a in ran.get("script_args", [])]
    command = f"cd {shlex.quote(cwd)} && python {shlex.join([ran['script'], *args])}"
    for path, exists in ((script, os.path.isfile), (cwd, os.path.isdir)):
        if not exists(path):
            raise ScriptSetupError(
                f"{helper} runs the eager run's script as that run did, for the custom ops, backend and settings "
                f"it defines, but {path} no longer exists"
            )
    reached: list = []
    ended: BaseException | None = None
    here, argv, tail = os.getcwd(), list(sys.argv), _StderrTail(sys.stderr)
    sys.stderr = tail
    try:
        os.chdir(cwd)
        with compile_redirected(lambda model, options: _until_called(model, reached)):
            run_as_main(script, args)
    except _FirstCompiledCall:
        pass
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 — whatever ended the script is the message
        ended = e
    finally:
        sys.stderr, sys.argv = tail.stream, argv
        os.chdir(here)
    if reached:  # the script may catch the unwinding and exit its own way
        return sys.modules["__main__"]
    if ended is not None and not isinstance(ended, SystemExit):
        traceback.print_exception(type(ended), ended, ended.__traceback__)
    raise ScriptSetupError(_what_happened(ended, script, tail.last_lines(), command, helper))


def _what_happened(ended: BaseException | None, script: str, stderr: list[str], command: str, helper: str) -> str:
    name = os.path.basename(script)
    if isinstance(ended, SystemExit) and exit_status(ended) != 0:
        what = f"{name} exited with status {exit_status(ended)} before its first compiled call"
        if not isinstance(ended.code, int):
            stderr = [*stderr, str(ended.code)]
    elif ended is not None and not isinstance(ended, SystemExit):
        frames = traceback.extract_tb(ended.__traceback__)
        frame = ([f for f in frames if f.filename == script] or frames or [None])[-1]  # the script's own line
        where = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
        first_line = (str(ended).strip().splitlines() or [""])[0]
        what = f"{name} raised {type(ended).__name__}: {first_line}{where} before its first compiled call"
    else:
        what = f"{name} ended (exit status 0) without calling a torch.compile'd model or function"
    if stderr:
        what += "; its last stderr lines: " + " | ".join(line.rstrip()[:300] for line in stderr)
    return (
        f"{what}. {helper.capitalize()} runs the script as the eager run did ({command}) up to its first "
        "compiled call, for the custom ops, backend and settings it defines: that command must reach a call "
        "of what torch.compile returned, as it did in the eager run (does the script depend on a file that "
        "run wrote, or on something else that run changed?)"
    )
