"""Inductor's precision-relevant switches as named rules, for `fusion_bisect` with knob
`inductor`: each rule is on in Inductor's default configuration and has an eager-like setting
that turns it off. The run spec's `switches.inductor_off` lists the rules to turn off; the run's
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
}


def unknown(names) -> list[str]:
    return [n for n in names if n not in RULES]


def overrides_off(names) -> dict:
    """torch._inductor.config overrides that turn `names` off."""
    return {RULES[n].config: RULES[n].off_value for n in names}
