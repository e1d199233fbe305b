"""`python -m diagnose_pytorch warm`: a parent that has imported torch and the plugin once and
forks a child for each `run` the engine asks for (orchestrator/exec/warm_launcher.h).

JSON lines, the engine's requests on stdin, the answers on stdout:
  parent: {"ready": true, "pid": P}  or  {"refused": WHY} (then it exits)
  engine: {"id": N, "argv": [...], "cwd": D, "env": {...}, "stdout": PATH, "stderr": PATH}
  parent: {"id": N, "pid": CHILD}  or  {"id": N, "refused": WHY}
  parent: {"id": N, "exit_code": C}  or  {"id": N, "signal": S}  when the child has ended
End of input (the engine ended, however it ended) kills every child's process group, then the parent.

The child has a plain process's semantics: a session and process group of its own, the run's
cwd, exactly the run's environment, its logs as stdout and stderr, stdin from /dev/null, the argv
`python -m diagnose_pytorch run ...` would have, and its exit status or death by signal. The
parent never runs a torch op nor initialises an accelerator (a forked child could not use it),
and never imports torch._dynamo or torch._inductor: the run configures them after its spec."""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import select
import signal
import sys
import traceback
from typing import Callable

import torch

from . import runner  # noqa: F401  imported here, once, for every child

# Variables a child may have with a value other than the parent's: the run's spec and dump
# paths, read by the plugin when the run starts. Any other difference (OMP_NUM_THREADS,
# TORCH_*, LD_*, PYTHON*...) may have been read while torch was imported: no fork then.
PER_RUN_PREFIX = "DIAGNOSE_"
PROTOCOL_IN, PROTOCOL_OUT = 0, 1
PR_SET_PDEATHSIG = 1


def initialised_accelerator() -> str | None:
    for name in ("cuda", "xpu", "npu"):
        module = getattr(torch, name, None)
        is_initialized = getattr(module, "is_initialized", None)
        if callable(is_initialized) and is_initialized():
            return name
    return None


def environment_difference(env: dict[str, str]) -> str | None:
    """The first variable, other than a per-run one, whose value differs from the parent's."""
    names = {name for name in set(env) | set(os.environ) if not name.startswith(PER_RUN_PREFIX)}
    for name in sorted(names):
        if env.get(name) != os.environ.get(name):
            return name
    return None


def send(message: dict) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(PROTOCOL_OUT, data) :]


def run_child(request: dict, main: Callable[[list[str]], int], wakeup: tuple[int, int]) -> None:
    """In the forked child: becomes the plain process, runs main, never returns."""
    code = 1
    try:
        os.setsid()
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wakeup:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for source, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(source, target)
            os.close(source)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        sys.argv = [sys.modules["__main__"].__file__, *argv[3:]]
        sys.path[0] = os.getcwd()  # as `python -m` starts it
        code = main(argv[3:])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # the death an uncaught KeyboardInterrupt gives a process
    except BaseException:  # what Python prints for an uncaught exception, and its exit status
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code if isinstance(code, int) else 1)


def serve(main: Callable[[list[str]], int]) -> int:
    accelerator = initialised_accelerator()
    if accelerator:
        send({"refused": f"{accelerator} is initialised in the warm process"})
        return 2
    wakeup = os.pipe()
    os.set_blocking(wakeup[1], False)
    signal.set_wakeup_fd(wakeup[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)
    send({"ready": True, "pid": os.getpid()})
    children: dict[int, int] = {}  # pid -> request id
    pending = b""
    while True:
        readable, _, _ = select.select([PROTOCOL_IN, wakeup[0]], [], [])
        if wakeup[0] in readable:
            os.read(wakeup[0], 4096)
        reap(children)
        if PROTOCOL_IN not in readable:
            continue
        data = os.read(PROTOCOL_IN, 65536)
        if not data:
            for pid in children:
                kill_group(pid)
            return 0
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            start(line, main, wakeup, children)


def start(line: bytes, main: Callable[[list[str]], int], wakeup: tuple[int, int], children: dict[int, int]) -> None:
    request = None
    try:
        request = json.loads(line)
        run_id = request["id"]
        env = request["env"]
        for key in ("argv", "cwd", "stdout", "stderr"):
            request[key]  # noqa: B018  each present before the fork, not after
    except (ValueError, KeyError, TypeError):
        # with its id, the engine's wait for this run ends
        run_id = request.get("id") if isinstance(request, dict) else None
        send({"id": run_id, "refused": f"malformed request: {line[:200]!r}"})
        return
    accelerator = initialised_accelerator()
    difference = environment_difference(env)
    if accelerator:
        send({"id": run_id, "refused": f"{accelerator} is initialised in the warm process"})
    elif difference:
        send({"id": run_id, "refused": f"{difference} differs from the warm process's environment"})
    else:
        try:
            pid = os.fork()
        except OSError as e:  # EAGAIN, ENOMEM: this run starts as a plain process instead
            send({"id": run_id, "refused": f"fork failed: {e}"})
            return
        if pid == 0:
            run_child(request, main, wakeup)
        children[pid] = run_id
        send({"id": run_id, "pid": pid})


def reap(children: dict[int, int]) -> None:
    for pid in list(children):
        # WNOWAIT keeps the pid (the group's id) taken while what the child left behind is killed.
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None:
            continue
        kill_group(pid)
        os.waitpid(pid, 0)
        run_id = children.pop(pid)
        if info.si_code == os.CLD_EXITED:
            send({"id": run_id, "exit_code": info.si_status})
        else:
            send({"id": run_id, "signal": info.si_status})


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
