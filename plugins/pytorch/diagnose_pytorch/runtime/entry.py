"""The boundary of the user's compiled callable: what `torch.compile(model)` returns under a
run spec. Each outermost call is one step (unless the user marks steps): inputs are moved to
the spec's device and dtype, the call runs under autocast and, in eager mode, under the ATen
dumper, and its outputs are recorded as the final outputs, followed by the state it leaves for
the next call (call_state.py)."""

from __future__ import annotations

import contextlib
import functools

import torch

from ..backends.spec_backend import make_backend
from ..compat import pytree
from ..dump.call_state import CallState
from ..status import configuration
from .session import Session

_original_compile = torch.compile


def compile_under_spec(session: Session, model, user_options: dict):
    """Replaces `torch.compile(model, **user_options)`: the spec decides backend and options (the
    script's `dynamic=` where the spec leaves it unset)."""
    session.status.record_compile_call(
        getattr(model, "__qualname__", type(model).__name__), {k: repr(v) for k, v in user_options.items()}
    )
    return wrap(session, model, user_options.get("dynamic"))


def wrap(session: Session, model, user_dynamic: bool | None = None):
    spec = session.spec
    root = model.__self__ if isinstance(getattr(model, "__self__", None), torch.nn.Module) else model
    session.status.record_configuration(configuration(root))
    if isinstance(root, torch.nn.Module):
        _convert_module(root, spec)
        if session.eager_dumper is not None:
            session.eager_dumper.modules.register_root(root)
    if spec.mode == "eager":
        target = model
    else:
        dynamic = spec.dynamic if spec.dynamic is not None else user_dynamic
        target = _original_compile(model, backend=make_backend(session), dynamic=dynamic, fullgraph=spec.fullgraph)
    boundary = Boundary(session, CallState(root))
    if isinstance(target, torch.nn.Module):
        target.register_forward_pre_hook(boundary.module_pre_hook, with_kwargs=True)
        target.register_forward_hook(boundary.module_post_hook, with_kwargs=True, always_call=True)
        return target

    @functools.wraps(model)
    def call(*args, **kwargs):
        args, kwargs = boundary.enter(args, kwargs)
        outputs = None
        try:
            outputs = target(*args, **kwargs)
            return outputs
        finally:
            boundary.exit(outputs)

    return call


class Boundary:
    def __init__(self, session: Session, state: CallState):
        self.session = session
        self.state = state
        self.contexts: list[contextlib.ExitStack] = []

    def enter(self, args, kwargs):
        session, spec = self.session, self.session.spec
        outermost = session.begin_call()
        stack = contextlib.ExitStack()
        self.contexts.append(stack)
        if not outermost:
            return args, kwargs
        args, kwargs = _convert_inputs((args, kwargs), spec)
        self.state.begin(args, kwargs)
        session.call_state = self.state
        if spec.autocast:
            stack.enter_context(torch.autocast(torch.device(spec.device).type, dtype=getattr(torch, spec.autocast)))
        if session.eager_dumper is not None:
            session.eager_dumper.mode.writers.clear()
            stack.enter_context(session.eager_dumper.active())
        return args, kwargs

    def exit(self, outputs) -> None:
        self.contexts.pop().close()
        self.session.end_call(outputs, self.state)

    def module_pre_hook(self, module, args, kwargs):
        return self.enter(args, kwargs)

    def module_post_hook(self, module, args, kwargs, output):
        self.exit(output)


def _convert_module(module: torch.nn.Module, spec) -> None:
    module.to(device=spec.device)
    if spec.dtype:
        module.to(dtype=getattr(torch, spec.dtype))


def _convert_inputs(tree, spec):
    dtype = getattr(torch, spec.dtype) if spec.dtype else None

    def convert(value):
        if not isinstance(value, torch.Tensor):
            return value
        value = value.to(device=spec.device)
        if dtype is not None and value.is_floating_point():
            value = value.to(dtype)
        return value

    return pytree.tree_map(convert, tree)
