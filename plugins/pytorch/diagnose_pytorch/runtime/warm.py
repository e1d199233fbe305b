"""`python -m diagnose_pytorch warm`: a parent that has imported torch and the plugin once and
forks a child for each command the engine asks for: a `run` of the model's script, or `single-op`
and `ops` (orchestrator/exec/warm_launcher.h).

JSON lines, the engine's requests on stdin, the answers on stdout:
  parent: {"ready": true, "pid": P}  or  {"refused": WHY} (then it exits)
  engine: {"id": N, "argv": [...], "cwd": D, "env": {...}, "stdout": PATH, "stderr": PATH}
  parent: {"id": N, "pid": CHILD}  or  {"id": N, "refused": WHY}
  parent: {"id": N, "exit_code": C}  or  {"id": N, "signal": S}  when the child has ended
  engine: {"release": N}  when it will signal run N's group no more
End of input (the engine ended, however it ended) kills every child's process group and reaps the
children, then the parent exits; the engine reaps it (end_warm_processes), so every run's CPU time
counts among the engine's children's.

The pid is sent only once the child leads its own session, so the engine's first signal already
reaches the child's group and never the parent's. An ended child stays unreaped (its pid, the
group's id, taken) until the engine releases it: no signal of the engine reaches a reused pid.

The child has a plain process's semantics: a session and process group of its own, the run's
cwd, exactly the run's environment, its logs as stdout and stderr, stdin from /dev/null, the argv
`python -m diagnose_pytorch <command> ...` would have, a fresh interpreter's signal dispositions, the
`random` and numpy generators seeded from os.urandom, atexit handlers and flushed output when
it ends (an interrupt included), and its exit status or death by signal. The
parent never runs a torch op nor initialises an accelerator (a forked child could not use it). It
imports torch._dynamo and Inductor's compile_fx once (about 2.4 CPU-seconds a compiled run would
spend) and configures nothing in them: each run sets their config after its spec."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import traceback
from dataclasses import dataclass
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


@dataclass
class Parent:
    """What a forked child needs of its parent."""

    pid: int
    dispositions: dict[int, object]
    wakeup: tuple[int, int]


def import_compiler() -> str | None:
    """Imports Dynamo and Inductor for every child; what makes forking unsafe afterwards, or None.
    The environment is put back as it was: importing sets TORCHINDUCTOR_CACHE_DIR to its default
    (a child sets it again as a fresh process would), and TORCH_WARM_POOL=0 while importing keeps
    torch 2.5 from starting Inductor's compile workers at import where Triton is installed, a pool
    a forked child could not use (later versions start it at the first compile, in the child)."""
    threads = len(os.listdir("/proc/self/task"))
    environment = dict(os.environ)
    os.environ["TORCH_WARM_POOL"] = "0"
    try:
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
    finally:
        os.environ.clear()
        os.environ.update(environment)
    started = len(os.listdir("/proc/self/task")) - threads
    return f"importing torch._dynamo and torch._inductor started {started} thread(s)" if started else None


def fresh_dispositions() -> dict[int, object]:
    """Every signal's disposition as this interpreter started with it (importing torch, the
    compiler and the plugin changes none), which a fresh `python -m diagnose_pytorch run` would have too."""
    return {number: signal.getsignal(number) for number in signal.valid_signals()}


def reseed_generators() -> None:
    """`random` reseeds itself after a fork (os.register_at_fork); numpy's global generator, which a
    fresh process would seed from os.urandom, does not. torch's default seed is fixed in any process."""
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def run_child(request: dict, main: Callable[[list[str]], int], parent: Parent, in_session_write: int) -> None:
    """In the forked child: becomes the plain process, runs main, never returns. `in_session_write`
    is closed once it leads its own session."""
    code = 1
    interrupted = False
    try:
        os.setsid()
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent.pid:  # the parent died before the line above
            os._exit(1)
        os.close(in_session_write)  # the parent may now tell the engine the pid
        signal.set_wakeup_fd(-1)
        for number, disposition in parent.dispositions.items():
            # None: not set from Python, left as it was (SIGKILL and SIGSTOP stay SIG_DFL)
            if disposition is not None and signal.getsignal(number) != disposition:
                signal.signal(number, disposition)
        for fd in parent.wakeup:
            os.close(fd)
        reseed_generators()
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
        traceback.print_exc()
        interrupted = True
    except BaseException:  # what Python prints for an uncaught exception, and its exit status
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        if interrupted:  # after atexit and the flush, the death an uncaught KeyboardInterrupt gives
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code if isinstance(code, int) else 1)


def serve(main: Callable[[list[str]], int]) -> int:
    accelerator = initialised_accelerator()
    if accelerator:
        send({"refused": f"{accelerator} is initialised in the warm process"})
        return 2
    unsafe = import_compiler()
    if unsafe:
        send({"refused": unsafe})
        return 2
    parent = Parent(os.getpid(), fresh_dispositions(), os.pipe())
    os.set_blocking(parent.wakeup[1], False)
    signal.set_wakeup_fd(parent.wakeup[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)
    send({"ready": True, "pid": parent.pid})
    running: dict[int, int] = {}  # pid -> request id
    unreleased: dict[int, int] = {}  # request id -> pid of an ended child the engine may still signal
    pending = b""
    while True:
        readable, _, _ = select.select([PROTOCOL_IN, parent.wakeup[0]], [], [])
        if parent.wakeup[0] in readable:
            os.read(parent.wakeup[0], 4096)
        report_ended(running, unreleased)
        if PROTOCOL_IN not in readable:
            continue
        data = os.read(PROTOCOL_IN, 65536)
        if not data:
            for pid in [*running, *unreleased.values()]:
                kill_group(pid)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)  # reaped here: its resources count among this process's children's
            return 0
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            handle(line, main, parent, running, unreleased)


def handle(
    line: bytes,
    main: Callable[[list[str]], int],
    parent: Parent,
    running: dict[int, int],
    unreleased: dict[int, int],
) -> None:
    request = None
    try:
        request = json.loads(line)
        if "release" in request:
            pid = unreleased.pop(request["release"], None)
            if pid is not None:
                os.waitpid(pid, 0)
            return
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
        in_session_read, in_session_write = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:  # EAGAIN, ENOMEM: this run starts as a plain process instead
            os.close(in_session_read)
            os.close(in_session_write)
            send({"id": run_id, "refused": f"fork failed: {e}"})
            return
        if pid == 0:
            os.close(in_session_read)
            run_child(request, main, parent, in_session_write)
        os.close(in_session_write)
        os.read(in_session_read, 1)  # end of file: the child has its session, or has died
        os.close(in_session_read)
        running[pid] = run_id
        send({"id": run_id, "pid": pid})


def report_ended(running: dict[int, int], unreleased: dict[int, int]) -> None:
    for pid in list(running):
        # WNOWAIT keeps the pid (the group's id) taken while what the child left behind is killed,
        # and until the engine releases it.
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None:
            continue
        kill_group(pid)
        run_id = running.pop(pid)
        unreleased[run_id] = pid
        if info.si_code == os.CLD_EXITED:
            send({"id": run_id, "exit_code": info.si_status})
        else:
            send({"id": run_id, "signal": info.si_status})


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
