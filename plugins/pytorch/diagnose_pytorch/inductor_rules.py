"""Inductor's precision-relevant switches as named rules, for `fusion_bisect` with knob
`inductor`: each rule is on in Inductor's default configuration and has an eager-like setting
that turns it off. A graph pass of the user's own set in one of Inductor's custom-pass slots is a
rule too (off: the slot emptied), with its gate: the Inductor switch that also skips it. The run
spec's `switches.inductor_off` lists the rules to turn off; the run's
status.json says which were candidates, off and fired (inductor_rules_fired.py). No torch here:
the run spec and compat's probe read this table."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    config: str  # torch._inductor.config key
    off_value: object  # the eager-like setting
    what: str
    counter: str = ""  # Inductor counter that shows the rule rewrote something
    gate: str = ""  # a user's pass: the rule whose switch skips the passes around it, this one included


RULES = {
    "emulate_precision_casts": Rule(
        "emulate_precision_casts",
        True,
        "fused low-precision (bf16/fp16) ops keep their intermediates in fp32; off rounds each "
        "one to its dtype as eager does",
    ),
    "pattern_matcher": Rule(
        "pattern_matcher",
        False,
        "pattern rewrites (mm+bias to addmm, attention, decompositions by pattern...)",
        counter="pattern_matcher_count",
    ),
    "split_reductions": Rule(
        "split_reductions", False, "large reductions split in two stages (another summation order)"
    ),
    "fallback_random": Rule("fallback_random", True, "Inductor's own random number generation instead of eager's"),
    "joint_graph_constant_folding": Rule(
        "joint_graph_constant_folding", False, "constant subexpressions folded at compile time"
    ),
    "pre_grad_passes": Rule("use_pre_grad_passes", False, "the pre-grad FX passes (fusions on the Dynamo graph)"),
    "joint_graph_passes": Rule("use_joint_graph_passes", False, "the joint-graph passes (pattern rewrites, folding)"),
    "post_grad_passes": Rule("use_post_grad_passes", False, "the post-grad passes (pattern rewrites, reinplacing)"),
    **{
        slot: Rule(slot, None, f"the user's own graph pass set as torch._inductor.config.{slot}", gate=gate)
        for slot, gate in (
            ("pre_grad_custom_pass", "pre_grad_passes"),
            ("joint_custom_pre_pass", "joint_graph_passes"),
            ("joint_custom_post_pass", "joint_graph_passes"),
            ("post_grad_custom_pre_pass", "post_grad_passes"),
            ("post_grad_custom_post_pass", "post_grad_passes"),
        )
    },
}


def unknown(names) -> list[str]:
    return [n for n in names if n not in RULES]


def overrides_off(names) -> dict:
    """torch._inductor.config overrides that turn `names` off."""
    return {RULES[n].config: RULES[n].off_value for n in names}
