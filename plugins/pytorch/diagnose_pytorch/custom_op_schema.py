"""A custom op (torch.library; a namespace other than aten/prim/prims) checked against its schema as
`torch.library.opcheck`'s `test_schema` does: it runs on copies of the inputs under
SchemaCheckMode, which fails when an input the schema does not declare mutable was written, or an
output aliases an input without the schema saying so. Used by the meta check (checks/meta_check.py)
and by the eager dump, which records each custom op's result."""

from __future__ import annotations

import re

import torch

from . import compat
from .collectives import is_collective
from .compat import is_builtin, pytree

# SchemaCheckMode's messages, and what each says in the words of torch.library.custom_op
_SCHEMA_RULES = (
    (
        re.compile(r"Argument (\w+) is not defined as mutable but was mutated"),
        "undeclared mutation",
        "writes its input `{0}` in place, which the schema does not declare (custom_op: mutates_args=('{0}',))",
    ),
    (
        re.compile(r"Argument (\w+) is not defined to alias output but was aliasing"),
        "undeclared aliasing",
        "returns a view of its input `{0}`, which the schema does not declare (return a new tensor: clone it)",
    ),
    (
        re.compile(r"directly return inputs.*outputs\[(\d+)\] is (\w+)", re.S),
        "returns an input",
        "returns its input `{1}` itself as output {0} (return a new tensor: clone it)",
    ),
    (
        re.compile(r"Outputs (\d+) and (\d+) alias unexpectedly"),
        "undeclared aliasing",
        "outputs {0} and {1} share memory, which the schema does not declare",
    ),
)


def is_custom_op(func) -> bool:
    return isinstance(func, compat.OpOverload) and not is_builtin(func) and not is_collective(str(func))


def _keeping_rng(args, kwargs):
    """The generators as they were after the extra call: a custom op that draws random
    numbers must not shift what the rest of the model draws."""
    devices = {t.device for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
    accelerators = [d for d in devices if d.type not in ("cpu", "meta")]
    device_type = accelerators[0].type if accelerators else "cuda"
    indices = [d.index or 0 for d in accelerators if d.type == device_type]
    return torch.random.fork_rng(devices=indices, device_type=device_type)


def describe_schema_violation(error: Exception) -> dict | None:
    """SchemaCheckMode's error as a violation; None when the check itself could not run."""
    for pattern, kind, text in _SCHEMA_RULES:
        found = pattern.search(str(error))
        if found:
            return {"check": "schema", "kind": kind, "message": text.format(*found.groups())}
    return None


def schema_check(func, args, kwargs) -> dict | None:
    """A custom op's schema and what the op does that the schema does not declare
    (opcheck's test_schema, on copies of the inputs); None for torch's own ops."""
    if not is_custom_op(func):
        return None
    with _keeping_rng(args, kwargs):
        results = torch.library.opcheck(func, args, kwargs, test_utils=("test_schema",), raise_exception=False)
    checked = {"schema": str(func._schema), "violations": []}
    for result in results.values():
        if not isinstance(result, Exception):
            continue
        violation = describe_schema_violation(result)
        if violation is not None:
            checked["violations"].append(violation)
        else:
            checked["schema_error"] = f"{type(result).__name__}: {result}"
    return checked
