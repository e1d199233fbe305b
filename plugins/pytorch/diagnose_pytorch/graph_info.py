"""What the compiler did, read at the end of a run: Dynamo graph breaks and Inductor's
counters (which passes and pattern rewrites fired)."""
from __future__ import annotations


def collect_graph_info(session) -> None:
    from torch._dynamo.utils import counters

    breaks = dict(counters.get("graph_break", {}))
    graphs = session.status.data["graphs"]
    graphs["graph_breaks"] = sum(breaks.values())
    graphs["break_reasons"] = {str(k): v for k, v in breaks.items()}
    fired = session.status.data["switches"]["fired"]
    inductor = {k: v for k, v in counters.get("inductor", {}).items() if v}
    if session.spec.switches.inductor:
        session.status.data["switches"]["active"]["inductor"] = dict(session.spec.switches.inductor)
    if inductor:
        fired["inductor_counters"] = inductor
    if session.spec.backend == "torchair" and session.spec.mode == "compiled":
        from .torchair import fusion_result
        result = fusion_result()
        if result is not None:
            fired["fusion_result"] = result
