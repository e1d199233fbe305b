"""The torch compatibility layer (diagnose_pytorch/compat.py): on the running torch every stable
internal resolves and every feature is available; an internal that is gone or changed makes its
feature unavailable with the reason, reported, never raised; in process, nothing compiled."""

from __future__ import annotations

import importlib

import pytest
import torch

from diagnose_pytorch import compat
from diagnose_pytorch.dump.output_tree import output_tensors


@pytest.fixture
def fresh_probes(monkeypatch):
    """Probes run again in the test, and the process's own results are back afterwards."""
    monkeypatch.setattr(compat, "probed", {})


@pytest.mark.parametrize("name", sorted(compat.STABLE))
def test_stable_internals_resolve(name):
    assert getattr(compat, name) is not None


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_internal"):
        compat.no_such_internal  # noqa: B018


# what the supported torch versions lack (README.md's "Supported torch"); none from 2.13 on
UNAVAILABLE = {(2, 5): {"compiled_dump", "inductor_rules", "provenance"}, (2, 7): {"compiled_dump", "inductor_rules"}}
TORCH = tuple(int(part) for part in torch.__version__.split(".")[:2])


@pytest.mark.parametrize("name", sorted(compat.FEATURES))
def test_features_on_the_running_torch(name, fresh_probes):
    feature = compat.feature(name)
    if name in UNAVAILABLE.get(TORCH, ()):
        assert not feature.available and feature.reason.endswith(f"(torch {torch.__version__})")
        assert compat.probed[name]["without"] == compat.FEATURES[name][1]
    else:
        assert feature.available, feature.reason
        assert compat.probed[name] == {"available": True, "what": compat.FEATURES[name][0]}


@pytest.mark.skipif("compiled_dump" in UNAVAILABLE.get(TORCH, ()), reason="unavailable for another reason here")
def test_missing_wrapper_method_reported_not_raised(fresh_probes, monkeypatch):
    monkeypatch.delattr(compat.wrapper_codegen(), "codegen_multi_output")
    feature = compat.feature("compiled_dump")
    assert not feature.available
    assert "has no codegen_multi_output" in feature.reason
    assert f"(torch {torch.__version__})" in feature.reason
    entry = compat.probed["compiled_dump"]
    assert entry["available"] is False and entry["reason"] == feature.reason
    assert "final outputs only" in entry["without"]


def test_changed_signature_reported(fresh_probes, monkeypatch):
    wrapper = compat.wrapper_codegen()
    monkeypatch.setattr(wrapper, "generate_extern_kernel_out", lambda self, kernel, out, args: None)
    reason = compat.feature("compiled_dump").reason
    assert "generate_extern_kernel_out takes (self, kernel, out, args), not (self, node)" in reason


def test_missing_wrapper_class_reported(fresh_probes, monkeypatch):
    module = importlib.import_module("torch._inductor.codegen.wrapper")
    for name in ("PythonWrapperCodegen", "WrapperCodeGen"):
        monkeypatch.delattr(module, name, raising=False)
    feature = compat.feature("compiled_dump")
    assert not feature.available
    assert "has neither PythonWrapperCodegen nor WrapperCodeGen" in feature.reason


def test_probed_once(fresh_probes, monkeypatch):
    assert compat.feature("output_tree").available
    monkeypatch.delattr(compat.pytree, "SUPPORTED_NODES")
    assert compat.feature("output_tree").available  # the first answer stands for the process


def test_output_tree_without_pytree_registry(fresh_probes, monkeypatch):
    """Without pytree's registry (a torch that lacks it) the builtin containers are still
    walked, by their own structure: the same paths."""
    value = {"logits": torch.ones(1), "past": (torch.zeros(1), [torch.ones(2)])}
    expected = [o.path for o in output_tensors(value)]
    monkeypatch.setattr(compat, "probed", {})
    monkeypatch.delattr(compat.pytree, "_get_node_type")
    assert not compat.feature("output_tree").available
    assert "has no _get_node_type" in compat.probed["output_tree"]["reason"]
    assert [o.path for o in output_tensors(value)] == expected == ["logits", "past.0", "past.1.0"]


def test_dense_check_without_the_or_false_variant(monkeypatch):
    """A torch with is_non_overlapping_and_dense alone (2.5, 2.7) has it checked instead."""
    prims_common = importlib.import_module("torch._prims_common")
    check = getattr(prims_common, "is_non_overlapping_and_dense_or_false", None)
    check = check or prims_common.is_non_overlapping_and_dense
    monkeypatch.delattr(prims_common, "is_non_overlapping_and_dense_or_false", raising=False)
    monkeypatch.setattr(prims_common, "is_non_overlapping_and_dense", check, raising=False)
    assert compat.is_non_overlapping_and_dense(torch.ones(2, 3))
    assert not compat.is_non_overlapping_and_dense(torch.ones(2, 3)[:, ::2])
