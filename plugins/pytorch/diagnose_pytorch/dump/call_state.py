"""The state a call of the compiled callable leaves for the next one (docs/dump-format.md,
"State"): the root module's buffers, its parameters and the argument tensors the call wrote in
place (a KV cache in module buffers, a transformers StaticCache passed as an argument, an input
updated with `index_copy_`). Recorded after every call, in eager and compiled runs alike, so
the comparison sees a write the compiled graph lost or misplaced before any output shows it.

Buffers are recorded after every call whether or not the call wrote them: a run that lost the
write leaves them as they were, which is what must be compared. Parameters and arguments are
recorded when their version counter moved during the call: an argument written in eager and not
in the compiled run then has a record on one side only, which the comparison reports."""

from __future__ import annotations

import linecache
import sys
from pathlib import Path
from typing import NamedTuple

import torch

from .output_tree import output_tensors

_PLUGIN_DIR = str(Path(__file__).resolve().parent.parent)  # the whole package
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


class StateTensor(NamedTuple):
    path: str  # buffers.k_cache, parameters.w, inputs.args.1.layers.0.keys
    tensor: torch.Tensor


def _version(tensor: torch.Tensor) -> int | None:
    try:
        return tensor._version
    except RuntimeError:  # inference tensors have no version counter
        return None


class CallState:
    """The tensors that may carry state across calls of one compiled callable."""

    def __init__(self, root):
        self.root = root if isinstance(root, torch.nn.Module) else None
        self._before: list[tuple[str, torch.Tensor, int | None]] = []

    def begin(self, args, kwargs) -> None:
        """Notes the version counters of the call's argument tensors and the root's parameters."""
        candidates = [(f"inputs.{o.path}", o.tensor) for o in output_tensors({"args": list(args), "kwargs": kwargs})]
        if self.root is not None:
            candidates += [(f"parameters.{name}", p) for name, p in self.root.named_parameters()]
        self._before = [(path, t, _version(t)) for path, t in candidates]

    def tensors(self) -> list[StateTensor]:
        """Every tensor of the running call that may carry state, by the path `after` names it."""
        state = [StateTensor(path, t) for path, t, _ in self._before]
        if self.root is not None:
            state += [StateTensor(f"buffers.{name}", b) for name, b in self.root.named_buffers()]
        return state

    def after(self) -> list[StateTensor]:
        """The state after the call: every buffer, and what the call wrote in place."""
        state = []
        if self.root is not None:
            state += [StateTensor(f"buffers.{name}", b) for name, b in self.root.named_buffers()]
        seen = {id(s.tensor) for s in state}
        for path, tensor, version in self._before:
            if version is not None and _version(tensor) != version and id(tensor) not in seen:
                seen.add(id(tensor))
                state.append(StateTensor(path, tensor))
        self._before = []
        return state


def storage_key(tensor: torch.Tensor) -> tuple:
    """Tensors (and views) over the same memory share a key."""
    return (tensor.device.type, tensor.untyped_storage().data_ptr())


def user_frame() -> dict:
    """The innermost frame of the user's code on the stack: `line` (file:line) and `code`."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith((_PLUGIN_DIR, _TORCH_DIR, "<")) and "/contextlib.py" not in filename:
            code = linecache.getline(filename, frame.f_lineno).strip()
            place = {"line": f"{Path(filename).name}:{frame.f_lineno}"}
            return {**place, "code": code} if code else place
        frame = frame.f_back
    return {}


class StateWriters:
    """Eager mode: the last op of the current call that wrote each piece of memory, with the
    module it ran in and the user's line that called it (a state record's `sources`)."""

    def __init__(self):
        self._by_storage: dict[tuple, dict] = {}

    def clear(self) -> None:
        self._by_storage.clear()

    def note(self, func, args, kwargs, op: str, module: str) -> None:
        tensors = written_tensors(func, args, kwargs)
        if not tensors:
            return
        source = {"node": op, **({"module": module} if module else {}), **user_frame()}
        for tensor in tensors:
            self._by_storage[storage_key(tensor)] = source

    def source_of(self, tensor: torch.Tensor) -> dict | None:
        return self._by_storage.get(storage_key(tensor))


def written_tensors(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors an ATen op writes in place (its schema's mutable arguments)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return []
    named = {**dict(zip((a.name for a in schema.arguments), args)), **kwargs}
    return [
        named[a.name]
        for a in schema.arguments
        if a.alias_info is not None and a.alias_info.is_write and isinstance(named.get(a.name), torch.Tensor)
    ]
