"""Which of inductor_rules' rules were in force in this process' Inductor compiles and which
fired (a config switch fires when a graph compiles with it at its default; the pattern matcher
only when it rewrote something; a user's pass when its slot holds one), and the qualified name of
each user's pass: status.json's `inductor_rules`."""

from __future__ import annotations

import contextlib
import functools

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


def _cache_hits() -> tuple[int, int]:
    """Graphs Inductor's FX graph cache and AOT Autograd's cache handed back compiled (no
    GraphLowering made for them; a hit of the second may count in the first too)."""
    return compat.counters["inductor"]["fxgraph_cache_hit"], compat.counters["aot_autograd"]["autograd_cache_hit"]


@contextlib.contextmanager
def noting_compiles():
    """Notes each Inductor compile inside the block under the config in force: each GraphLowering
    Inductor makes, and each graph its caches hand back without one. A user's backend may call
    Inductor, with config of its own, or never."""
    lowering = compat.GraphLowering
    original = lowering.__init__
    hits = _cache_hits()

    @functools.wraps(original)
    def noted(self, *args, **kwargs):
        note_compile()
        original(self, *args, **kwargs)

    lowering.__init__ = noted
    try:
        yield
    finally:
        lowering.__init__ = original
        for _ in range(max(now - before for now, before in zip(_cache_hits(), hits))):
            note_compile()


def compiled_any() -> bool:
    """Whether Inductor compiled anything in this process (as far as it was noted)."""
    return _compiles > 0


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
