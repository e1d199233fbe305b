"""The arguments of one recorded op call as JSON (the `call` field of eager dump records), so
that the call can be replayed from the dump: the single-op check runs each op again with its
recorded inputs. Positional tensors (and tensors in a positional list) refer to the call's
input records by `index` (and `item`); every other value is written as itself."""

from __future__ import annotations

import math

import torch


class NotReplayable(ValueError):
    pass


def encode_call(args, kwargs) -> dict:
    return {
        "args": [_encode_positional(i, v) for i, v in enumerate(args)],
        "kwargs": {k: _encode(v) for k, v in kwargs.items()},
    }


def _encode_positional(index: int, value):
    if isinstance(value, torch.Tensor):
        return {"input": index}
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return [{"input": index, "item": j} if isinstance(v, torch.Tensor) else _encode(v) for j, v in enumerate(value)]
    return _encode(value)


def _encode(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, complex):
        return {"complex": [_encode(value.real), _encode(value.imag)]}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Tensor):
        # a tensor the dump does not hold (keyword or nested argument)
        return {"tensor": None, "dtype": str(value.dtype), "shape": list(value.shape)}
    return {"unsupported": type(value).__name__}


def decode_call(call: dict, inputs: dict, device: str | None = None):
    """(args, kwargs) with tensors taken from `inputs` {(index, item): tensor}; device
    arguments become `device` when it is given. Raises NotReplayable."""

    def tensor(ref):
        key = (ref["input"], ref.get("item"))
        if key not in inputs:
            raise NotReplayable(
                f"input {key[0]}" + (f" item {key[1]}" if key[1] is not None else "") + " was not dumped"
            )
        return inputs[key]

    def decode(value):
        if isinstance(value, list):
            return [decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "input" in value:
            return tensor(value)
        if "float" in value:
            return float(value["float"])
        if "complex" in value:
            return complex(*(decode(v) for v in value["complex"]))
        if "dtype" in value and "tensor" not in value:
            return getattr(torch, value["dtype"])
        if "device" in value:
            return torch.device(device or value["device"])
        if "layout" in value:
            return getattr(torch, value["layout"])
        if "memory_format" in value:
            return getattr(torch, value["memory_format"])
        if "tensor" in value:
            raise NotReplayable(
                f"a keyword or nested tensor argument ({value['dtype']}, shape {value['shape']}) was not dumped"
            )
        raise NotReplayable(f"an argument of type {value.get('unsupported', '?')} was not recorded")

    return [decode(v) for v in call["args"]], {k: decode(v) for k, v in call["kwargs"].items()}
