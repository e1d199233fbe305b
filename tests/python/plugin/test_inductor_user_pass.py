"""A user's own graph pass in one of Inductor's custom-pass slots is a rule of knob `inductor`
(inductor_rules.py): status.json names it by its qualified name, with its gate, and its off
setting really takes it out of Inductor's compile while the gate's passes stay on."""

import functools

import torch
import torch._inductor.config

from diagnose_pytorch import compat, inductor_rules_fired
from diagnose_pytorch.inductor_rules import RULES, overrides_off


def counting_pass(graph, calls):
    calls.append(len(graph.nodes))


def test_the_slot_holding_a_pass_fires_under_the_passes_qualified_name(monkeypatch):
    monkeypatch.setattr(inductor_rules_fired, "_in_force", set())
    monkeypatch.setattr(inductor_rules_fired, "_user_passes", {})
    with compat.inductor_config.patch({"post_grad_custom_post_pass": functools.partial(counting_pass, calls=[])}):
        inductor_rules_fired.note_compile()
    report = inductor_rules_fired.report([])
    assert "post_grad_custom_post_pass" in report["fired"]
    assert "pre_grad_custom_pass" not in report["fired"], "an empty slot is no candidate"
    assert report["user_passes"] == {"post_grad_custom_post_pass": f"{__name__}.counting_pass"}
    assert report["rules"]["post_grad_custom_post_pass"]["gate"] == "post_grad_passes"
    assert RULES["pre_grad_custom_pass"].gate == "pre_grad_passes"


def test_switched_off_the_users_pass_does_not_run_and_the_gate_stays_on():
    calls = []

    def compiled_with(overrides):
        def backend(gm, example_inputs):
            with torch._inductor.config.patch({**overrides, "fx_graph_cache": False}):
                return compat.compile_fx(gm, example_inputs)

        torch._dynamo.reset()
        return torch.compile(lambda x: torch.sin(x) + 1, backend=backend)(torch.ones(3))

    with torch._inductor.config.patch(pre_grad_custom_pass=functools.partial(counting_pass, calls=calls)):
        compiled_with({})
        assert len(calls) == 1
        off = overrides_off(["pre_grad_custom_pass"])
        assert off == {"pre_grad_custom_pass": None}
        compiled_with(off)
        assert len(calls) == 1, "the emptied slot ran no pass"
        assert torch._inductor.config.use_pre_grad_passes, "the gate is not touched"


def test_a_user_backend_notes_the_inductor_compiles_inside_it_and_only_those(monkeypatch):
    """A user's backend may call Inductor (with config of its own) or never: each Inductor compile
    inside it is noted under the config in force, a graph Inductor's cache hands back too, and a
    backend that runs the graph as is notes nothing."""
    monkeypatch.setattr(inductor_rules_fired, "_compiles", 0)
    monkeypatch.setattr(inductor_rules_fired, "_in_force", set())
    monkeypatch.setattr(inductor_rules_fired, "_user_passes", {})

    def compiled_with(backend):
        torch._dynamo.reset()
        with inductor_rules_fired.noting_compiles():
            torch.compile(lambda x: torch.cos(x) * 3, backend=backend)(torch.ones(3))

    compiled_with(lambda gm, example_inputs: gm.forward)
    assert not inductor_rules_fired.compiled_any()

    def with_its_own_pass(gm, example_inputs):
        own_pass = functools.partial(counting_pass, calls=[])
        with torch._inductor.config.patch(post_grad_custom_post_pass=own_pass, fx_graph_cache=False):
            return compat.compile_fx(gm, example_inputs)

    compiled_with(with_its_own_pass)
    assert inductor_rules_fired._compiles == 1
    assert "post_grad_custom_post_pass" in inductor_rules_fired.report([])["fired"], "the backend's own config"

    def cached(gm, example_inputs):
        with torch._inductor.config.patch(fx_graph_cache=True):
            return compat.compile_fx(gm, example_inputs)

    compiled_with(cached)
    noted = inductor_rules_fired._compiles
    compiled_with(cached)  # the same graph again: Inductor's cache hands it back, no GraphLowering
    assert inductor_rules_fired._compiles > noted
