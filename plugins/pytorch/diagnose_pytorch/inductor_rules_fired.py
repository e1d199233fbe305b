"""Which of inductor_rules' rules were in force in this process' Inductor compiles and which
fired (a config switch fires when a graph compiles with it at its default; the pattern matcher
only when it rewrote something; a user's pass when its slot holds one), and the qualified name of
each user's pass: status.json's `inductor_rules`."""

from __future__ import annotations

from . import compat
from .inductor_rules import RULES

_in_force: set[str] = set()  # rules at their default in at least one compile of this process
_compiles = 0
_user_passes: dict[str, str] = {}  # rule: the qualified name of the pass its slot held


def qualified_name(graph_pass) -> str:
    """`module.qualname` of a function (a partial's function), else of the object's class; a list's joined."""
    if isinstance(graph_pass, (list, tuple)):
        return ", ".join(qualified_name(p) for p in graph_pass)
    target = getattr(graph_pass, "func", graph_pass)  # functools.partial
    if not hasattr(target, "__qualname__"):
        target = type(target)
    return f"{getattr(target, '__module__', '?')}.{target.__qualname__}"


def note_compile() -> None:
    """Called inside each compile, under the run's config: which rules are in force."""
    global _compiles
    _compiles += 1
    current = compat.inductor_config.get_config_copy()
    for name, rule in RULES.items():
        if rule.config in current and current[rule.config] != rule.off_value:
            _in_force.add(name)
            if rule.gate:
                _user_passes[name] = qualified_name(current[rule.config])


def report(off) -> dict:
    compat.feature("inductor_rules")  # status.json's features: the rules this torch has no switch for
    current = compat.inductor_config.get_config_copy()
    fired = []
    for name, rule in RULES.items():
        if name not in _in_force:
            continue
        if rule.counter and not compat.counters.get("inductor", {}).get(rule.counter):
            continue
        fired.append(name)
    return {
        "candidates": [n for n, r in RULES.items() if r.config in current],
        "off": list(off),
        "fired": fired,
        "compiles": _compiles,
        "rules": {
            n: {"config": r.config, "off_value": r.off_value, "what": r.what, **({"gate": r.gate} if r.gate else {})}
            for n, r in RULES.items()
        },
        "user_passes": dict(_user_passes),
    }
