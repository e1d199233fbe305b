"""diagnose_pytorch: the in-process side of `diagnose`.

Zero code change: `python -m diagnose_pytorch run script.py args...` with $DIAGNOSE_RUN_SPEC.
Explicit use:

    import diagnose_pytorch as dp
    dp.start()                      # spec from $DIAGNOSE_RUN_SPEC, or dp.start(spec_dict)
    model = dp.wrap(model)          # compiled or eager, dumping, as the spec says
    for token in range(n):
        with dp.step(token):
            out = model(x)
    dp.finish()
"""

from __future__ import annotations

import contextlib
import os

from .backends.torchair import get_fx_dump_config, get_ge_dump_config
from .spec import RunSpec, SpecError

__all__ = ["RunSpec", "SpecError", "start", "wrap", "step", "finish", "get_ge_dump_config", "get_fx_dump_config"]


def start(spec: "RunSpec | dict | str | os.PathLike | None" = None):
    # imports torch: `python -m diagnose_pytorch` imports this package, before its torch check
    from .runtime.session import Session

    if spec is None:
        spec = RunSpec.from_env()
    elif isinstance(spec, dict):
        spec = RunSpec.from_dict(spec)
    elif not isinstance(spec, RunSpec):
        spec = RunSpec.load(spec)
    return Session(spec)


def _session():
    from .runtime.session import active  # imports torch, as in start()

    session = active()
    if session is None:
        raise RuntimeError("no diagnose session: call diagnose_pytorch.start() first")
    return session


def wrap(model):
    """The model as the spec wants it run: compiled with the spec's backend, or eager."""
    from .runtime.entry import wrap as wrap_model  # imports torch, as in start()

    return wrap_model(_session(), model)


@contextlib.contextmanager
def step(number: int):
    """Marks the calls inside as step (token) `number`; marking any step turns off the
    default of one step per top-level call."""
    _session().set_step(number)
    yield


def finish(error: BaseException | None = None) -> None:
    _session().close(error)
