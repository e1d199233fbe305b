"""The torch.compile backend a run uses, built from the spec: the dumping backends for the
FX and compiled levels, TorchAir, a user backend under the spec's Inductor switches, or a builtin
backend counted and timed as is."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time

from .. import compat
from ..dump.fx_dump import dumping_backend, graph_values
from ..dump.inductor_dump import inductor_backend
from .torchair import npu_backend


def resolve(name: str):
    """A builtin backend name, or `module:function` for a user entry point."""
    if ":" in name:
        module, _, attr = name.partition(":")
        return getattr(user_module(module), attr)
    return compat.lookup_backend(name)


def user_module(name: str):
    """The module `name`; the running script's own module when `name` is the script (`model` for
    model.py): importing it would run its program a second time, under another name."""
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if main_file and name not in sys.modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if origin and os.path.isfile(origin) and os.path.samefile(origin, main_file):
            return main
    return importlib.import_module(name)


def make_backend(session):
    """The run's backend; each graph Dynamo hands it is snapshotted first (dump/provenance.py) and
    the size of its values recorded once it compiled."""
    backend = _spec_backend(session)
    if session.isolation is not None:
        backend = session.isolation.splitting_backend(backend)
    return session.provenance.wrapping(sized(session, backend))


def sized(session, backend):
    def backend_fn(gm, example_inputs, **kwargs):
        values = graph_values(gm)  # before the compiler rewrites the graph
        compiled = backend(gm, example_inputs, **kwargs)
        session.status.record_graph_values(*values)
        return compiled

    return backend_fn


def _spec_backend(session):
    spec, level = session.spec, session.level
    if spec.backend == "torchair":
        return counted(session, npu_backend(session))
    if level == "fx":
        return dumping_backend(session, spec.backend)
    if spec.backend == "inductor":
        return inductor_backend(session, dump=level == "compiled")
    if level == "compiled":  # a user backend built on Inductor
        return inductor_backend(session, dump=True, compiler=resolve(spec.backend))
    if ":" in spec.backend:  # a user backend, perhaps built on Inductor: under the spec's Inductor switches
        return inductor_backend(session, dump=False, compiler=resolve(spec.backend))
    return counted(session, resolve(spec.backend))


def counted(session, backend):
    def backend_fn(gm, example_inputs, **kwargs):
        session.new_graph()
        started = time.perf_counter()
        compiled = backend(gm, example_inputs, **kwargs)
        session.status.record_compile_seconds(time.perf_counter() - started)
        return compiled

    return backend_fn
