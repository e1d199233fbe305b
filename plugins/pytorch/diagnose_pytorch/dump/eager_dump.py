"""Eager dumping: every ATen op through a TorchDispatchMode, attributed to the module that
called it through global module hooks that keep a stack of module paths.

op_key = `{module path}/{op}#{n}` (`{op}#{n}` at the root), n counting calls of that op from
that module within the step; module records use `{module path}#{n}` (`<root>#{n}`)."""

from __future__ import annotations

import collections
import contextlib

import torch

from .. import compat
from ..compat import TorchDispatchMode, pytree
from ..custom_op_schema import schema_check
from .call_args import encode_call
from .call_state import StateWriters, written_tensors
from .dump_writer import dumpable, nonfinite_constant

# The share of an eager ATen dump's byte budget kept for the inputs of each op signature's first
# call (op, arguments, input shapes, dtypes and strides): what the single-op check replays, one
# call per signature, however many layers repeat it. Ordinary records may not use the part of it
# those inputs have not used yet.
SINGLE_OP_RESERVE = 0.125


def call_signature(op: str, call, args, kwargs) -> str:
    """What decides a one-op graph's compiled code (checks/single_op.py's _signature): the op,
    its encoded arguments and each tensor's shape, dtype and strides."""
    tensors = [
        (list(t.shape), str(t.dtype), list(t.stride())) for t in pytree.tree_leaves((args, kwargs)) if dumpable(t)
    ]
    return repr((op, call, tensors))


class ModuleStack:
    def __init__(self, names: dict[int, str]):
        self.names = names
        self.paths: list[str] = []

    def register_root(self, module: torch.nn.Module) -> None:
        for name, sub in module.named_modules(remove_duplicate=False):
            self.names.setdefault(id(sub), name)

    def path_of(self, module: torch.nn.Module) -> str:
        name = self.names.get(id(module))
        if name is not None:
            return name
        parent = self.paths[-1] if self.paths else ""
        return f"{parent}.{type(module).__name__}" if parent else type(module).__name__

    @property
    def current(self) -> str:
        return self.paths[-1] if self.paths else ""


class EagerDumpMode(TorchDispatchMode):
    def __init__(self, session, modules: ModuleStack):
        super().__init__()
        self.session = session
        self.modules = modules
        self.op_counts: collections.Counter = collections.Counter()
        self.module_counts: collections.Counter = collections.Counter()
        self.counted_step = None
        self.writers = StateWriters()  # who wrote the state a call leaves (call_state.py)
        self.signatures: set[str] = set()  # of the calls whose inputs were needed (call_signature)

    def _count(self, counter: collections.Counter, key) -> int:
        if self.counted_step != self.session.step:
            self.op_counts.clear()
            self.module_counts.clear()
            self.counted_step = self.session.step
        n = counter[key]
        counter[key] += 1
        return n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        session = self.session
        shadows = session.shadows if session.shadowing() else None
        if shadows is None and not session.dumping():
            return func(*args, **kwargs)
        # the float64 shadows of the inputs, before the op can mutate them (every op: an
        # unselected one computes what a selected one reads; without an op dump, what the
        # final outputs' truth is computed from)
        pending = shadows.prepare(func, args, kwargs) if shadows is not None else None

        def run():
            out = func(*args, **kwargs)
            if pending is not None:
                shadows.complete(pending, out)
            if session.dump is not None:  # before the outputs are recorded (recorded_views.py)
                session.dump.views.forget(written_tensors(func, args, kwargs))
            return out

        if not session.dumping():
            return run()
        module = self.modules.current
        op = str(func)
        n = self._count(self.op_counts, (module, op))
        op_key = f"{module}/{op}#{n}" if module else f"{op}#{n}"
        meta = session.meta_checker
        checked = meta is not None and meta.wants(op, args, kwargs)
        # both before the real op, which may mutate its inputs
        fake = meta.fake_run(func, args, kwargs) if checked else None
        schema = schema_check(func, args, kwargs) if checked else None
        if not (session.dumping_ops() and session.selected(op_key, op, module)):
            out = run()
        else:
            out = self._dump_call(run, args, kwargs, op_key, op, module)
        if checked:
            meta.record(op, op_key, fake, out, schema)
        self.writers.note(func, args, kwargs, op, module)
        return out

    def _dump_call(self, run, args, kwargs, op_key: str, op: str, module: str):
        """The call's records carry `call` (its arguments, for replay): its input records, or
        its output records when it has no tensor input. `run` runs the op (and its shadow)."""
        session = self.session
        seq = session.next_seq()
        call = encode_call(args, kwargs)
        fields = {"nonfinite_constant": True} if nonfinite_constant(args, kwargs) else {}
        written = session.dump.records
        if session.wants_io("input"):
            signature = call_signature(op, call, args, kwargs)
            needed = signature not in self.signatures
            self.signatures.add(signature)
            session.write_args(
                args,
                seq=seq,
                op_key=op_key,
                io="input",
                op=op,
                module=module,
                call=call,
                needed=needed,
                reuse=True,
                **fields,
            )
        out = run()
        if session.wants_io("output"):
            outs = out if isinstance(out, (list, tuple)) else (out,)
            session.write_args(
                outs,
                seq=seq,
                op_key=op_key,
                io="output",
                op=op,
                module=module,
                call=call if session.dump.records == written else None,
                reuse=True,
                **fields,
            )
        return out

    def module_output(self, module: torch.nn.Module, path: str, output) -> None:
        session = self.session
        if not (session.spec.dump.modules and session.dumping()):
            return
        n = self._count(self.module_counts, path)
        op_key = f"{path or '<root>'}#{n}"
        if not session.selected(op_key, type(module).__name__, path):
            return
        seq = session.next_seq()
        for index, value in enumerate(pytree.tree_leaves(output)):
            session.write(
                value,
                seq=seq,
                op_key=op_key,
                io="output",
                index=index,
                kind="module",
                op=type(module).__name__,
                module=path,
                reuse=True,
            )


class EagerDumper:
    """Per session: the module names and the per-step counters outlive single calls."""

    def __init__(self, session):
        self.modules = ModuleStack({})
        self.mode = EagerDumpMode(session, self.modules)

    @contextlib.contextmanager
    def active(self):
        """Around one top-level call in eager mode."""
        modules, mode = self.modules, self.mode

        def push(module, args):
            modules.paths.append(modules.path_of(module))

        def pop(module, args, output):
            path = modules.paths.pop() if modules.paths else ""
            with compat.disable_current_modes():
                mode.module_output(module, path, output)

        pre = torch.nn.modules.module.register_module_forward_pre_hook(push)
        post = torch.nn.modules.module.register_module_forward_hook(pop)
        try:
            with mode:
                yield
        finally:
            pre.remove()
            post.remove()
            modules.paths.clear()
