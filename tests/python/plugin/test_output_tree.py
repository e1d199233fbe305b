"""The final outputs' paths (diagnose_pytorch/dump/output_tree.py): every tensor reachable from a
return value, named by where it sits, non-tensors skipped; in process, nothing compiled."""

from __future__ import annotations

import collections
import dataclasses

import pytest
import torch
from torch.utils import _pytree as pytree

from diagnose_pytorch.dump.output_tree import output_tensors


def paths(value) -> dict[str, torch.Tensor]:
    return {o.path: o.tensor for o in output_tensors(value)}


@dataclasses.dataclass
class Prediction:
    scores: torch.Tensor
    label: str
    extra: tuple = ()


class ModelOutputLike(collections.OrderedDict):
    """What a transformers ModelOutput is: an OrderedDict of its non-None fields."""


class Registered:
    """A class only torch's pytree knows how to open (children without key names)."""

    def __init__(self, a, b):
        self.hidden_a, self.hidden_b = a, b


pytree.register_pytree_node(Registered, lambda r: ([r.hidden_a, r.hidden_b], None), lambda c, _: Registered(*c))


class Layer:
    def __init__(self, keys, values):
        self.keys, self.values = keys, values
        self.is_initialized = True
        self.device = keys.device


class CacheLike:
    """A Hugging Face DynamicCache as transformers 5 lays it out (layers[i].keys/values), with
    the attributes that are no outputs beside them."""

    def __init__(self, layers):
        self.layers = layers
        self.layer_class_to_replicate = Layer
        self.offloading = False
        self._scratch = torch.ones(1)


class OldCacheLike:
    def __init__(self, keys, values):
        self.key_cache, self.value_cache = keys, values


def test_every_reachable_tensor_has_its_path_and_non_tensors_are_skipped():
    t = [torch.full((2,), float(i)) for i in range(12)]
    NT = collections.namedtuple("NT", "first second")
    cache = CacheLike([Layer(t[4], t[5]), Layer(t[6], t[7])])
    outputs = (
        t[0],
        {"a": [t[1], None, 3, "text"], "nt": NT(t[2], 1.5)},
        Prediction(t[3], "cat", extra=(None, t[11])),
        ModelOutputLike(logits=t[8], past_key_values=cache),
        Registered(t[9], OldCacheLike([t[10]], [])),
        torch.nn.Linear(2, 2),  # a module: its parameters are no outputs
        torch.float32,
    )
    found = paths(outputs)
    assert list(found) == [
        "0",
        "1.a.0",
        "1.nt.first",
        "2.scores",
        "2.extra.1",
        "3.logits",
        "3.past_key_values.layers.0.keys",
        "3.past_key_values.layers.0.values",
        "3.past_key_values.layers.1.keys",
        "3.past_key_values.layers.1.values",
        "4.0",
        "4.1.key_cache.0",
    ]
    assert [found[p] for p in found] == [t[i] for i in (0, 1, 2, 3, 11, 8, 4, 5, 6, 7, 9, 10)]
    # the return value itself, and a return value holding itself
    assert paths(t[0]) == {"": t[0]}
    loop = {"x": t[0]}
    loop["self"] = loop
    assert paths(loop) == {"x": t[0]}


def test_index_is_the_pytree_leaf_index_where_pytree_knows_the_containers():
    x, y = torch.ones(1), torch.zeros(2)
    outputs = {"a": (x, None, 2), "b": [y]}
    assert [(o.path, o.index) for o in output_tensors(outputs)] == [("a.0", 0), ("b.0", 3)]
    leaves = pytree.tree_leaves(outputs)
    assert leaves[0] is x and leaves[3] is y


def test_a_transformers_model_output_and_dynamic_cache():
    transformers = pytest.importorskip("transformers")
    cache = transformers.DynamicCache()
    k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    cache.update(k, v, layer_idx=0)
    out = transformers.modeling_outputs.CausalLMOutputWithPast(logits=torch.randn(1, 3, 8), cache=cache)
    found = paths(out)  # transformers 5.24 names the field `cache` (`past_key_values` before)
    assert list(found) == ["logits", "cache.layers.0.keys", "cache.layers.0.values"]
    assert torch.equal(found["cache.layers.0.keys"], k)
