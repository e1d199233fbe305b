"""The tensors a model returns, each with a readable path: `logits`, `0.1`,
`past_key_values.layers.0.keys`. The final outputs (session.py) are every tensor reachable from
the compiled callable's return value, named so that an eager and a compiled run pair by path.

What is walked into, in this order:
- the containers torch's pytree knows, tuples, lists, dicts (a transformers ModelOutput is an
  OrderedDict), namedtuples and whatever a library registered (keys as pytree names them;
  numbered children where it registered no keys);
- other mappings, lists and tuples; dataclass instances (by field);
- any other object with attributes (a Hugging Face cache: `layers.0.keys`, or
  `key_cache.0` in older versions; an encoder-decoder cache's `self_attention_cache...`), by
  its public attributes in name order, so how the object was built (eagerly, or rebuilt by
  Dynamo) cannot change the order. Private attributes (`_name`) are scratch state, not outputs.
Not walked into: modules (their parameters are not outputs), classes, functions, modules of
code. Everything else is a leaf: a tensor, or a value that is skipped (None, numbers,
strings, opaque objects)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Iterator, NamedTuple

import torch

from .. import compat
from ..compat import pytree

_NOT_WALKED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, torch.nn.Module)


class OutputTensor(NamedTuple):
    path: str  # "" for the return value itself
    index: int  # position among the leaves in walk order: for pytree containers, the pytree leaf index
    tensor: torch.Tensor


def output_tensors(value) -> list[OutputTensor]:
    """Every tensor reachable from `value`, in walk order, each with its path."""
    leaves = 0
    found: list[OutputTensor] = []
    for path, leaf in _walk(value, (), set()):
        if isinstance(leaf, torch.Tensor):
            found.append(OutputTensor(".".join(path), leaves, leaf))
        leaves += 1
    return found


def _walk(value, path: tuple[str, ...], open_ids: set[int]) -> Iterator[tuple[tuple[str, ...], object]]:
    children = None if isinstance(value, torch.Tensor) or id(value) in open_ids else _children(value)
    if children is None:
        yield path, value
        return
    open_ids.add(id(value))  # a container holding itself (directly or not) is walked once
    for key, child in children:
        yield from _walk(child, path + (key,), open_ids)
    open_ids.discard(id(value))


def _children(value) -> list[tuple[str, object]] | None:
    """(key, child) pairs of a value that is walked into; None for a leaf."""
    registered = compat.feature("output_tree").available
    node = pytree.SUPPORTED_NODES.get(pytree._get_node_type(value)) if registered else None
    if node is not None:
        if node.flatten_with_keys_fn is not None:
            pairs, _ = node.flatten_with_keys_fn(value)
            return [(_key_text(key), child) for key, child in pairs]
        children, _ = node.flatten_fn(value)
        return [(str(i), child) for i, child in enumerate(children)]
    if isinstance(value, Mapping):
        return [(str(key), child) for key, child in value.items()]
    if isinstance(value, (list, tuple)):
        return [(str(i), child) for i, child in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    if isinstance(value, _NOT_WALKED) or not hasattr(value, "__dict__"):
        return None
    return [(name, child) for name, child in sorted(vars(value).items()) if not name.startswith("_")]


def _key_text(key) -> str:
    for field in ("idx", "key", "name"):  # pytree's SequenceKey, MappingKey, GetAttrKey
        if hasattr(key, field):
            return str(getattr(key, field))
    return str(key)
