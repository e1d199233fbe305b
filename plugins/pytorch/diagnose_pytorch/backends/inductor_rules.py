"""Inductor's precision-relevant switches as named rules, for `fusion_bisect` with knob
`inductor`: each rule is on in Inductor's default configuration and has an eager-like setting
that turns it off. The run spec's `switches.inductor_off` lists the rules to turn off; the run's
status.json says under `inductor_rules` which rules were candidates, which were off and which
fired (a config switch fires when a graph compiles with it at its default; the pattern
matcher only when it rewrote something)."""

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

_in_force: set[str] = set()  # rules at their default in at least one compile of this process
_compiles = 0


def unknown(names) -> list[str]:
    return [n for n in names if n not in RULES]


def overrides_off(names) -> dict:
    """torch._inductor.config overrides that turn `names` off."""
    return {RULES[n].config: RULES[n].off_value for n in names}


def note_compile() -> None:
    """Called inside each compile, under the run's config: which rules are in force."""
    global _compiles
    from ..compat import inductor_config as config

    _compiles += 1
    current = config.get_config_copy()
    for name, rule in RULES.items():
        if rule.config in current and current[rule.config] != rule.off_value:
            _in_force.add(name)


def report(off) -> dict:
    from ..compat import counters, feature, inductor_config

    feature("inductor_rules")  # status.json's features: the rules this torch has no switch for
    current = inductor_config.get_config_copy()
    fired = []
    for name, rule in RULES.items():
        if name not in _in_force:
            continue
        if rule.counter and not counters.get("inductor", {}).get(rule.counter):
            continue
        fired.append(name)
    return {
        "candidates": [n for n, r in RULES.items() if r.config in current],
        "off": list(off),
        "fired": fired,
        "compiles": _compiles,
        "rules": {n: {"config": r.config, "off_value": r.off_value, "what": r.what} for n, r in RULES.items()},
    }
