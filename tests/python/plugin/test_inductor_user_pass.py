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
