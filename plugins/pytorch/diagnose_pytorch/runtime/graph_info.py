"""What the compiler did, read at the end of a run: Dynamo graph breaks, recompiles (the guard
that failed each time) and Inductor's counters (which passes and pattern rewrites fired)."""

from __future__ import annotations

from pathlib import Path

from .. import compat
from ..backends.torchair import fusion_result
from ..inductor_rules_fired import compiled_any, report

# The first failed guards a status.json keeps: the pattern shows in a few, a shape sweep has hundreds.
RECOMPILE_REASONS_KEPT = 5


def collect_graph_info(session) -> None:
    session.status.record_graph_breaks(dict(compat.counters.get("graph_break", {})))
    failed_guards = [str(reason) for reasons in compat.guard_failures.values() for reason in reasons]
    session.status.record_recompiles(len(failed_guards), failed_guards[:RECOMPILE_REASONS_KEPT])
    inductor = {k: v for k, v in compat.counters.get("inductor", {}).items() if v}
    if inductor:
        session.status.record_fired("inductor_counters", inductor)
    backend = session.spec.backend
    if session.spec.mode == "compiled" and (backend == "inductor" or (":" in backend and compiled_any())):
        session.status.record_inductor_rules(report(session.spec.switches.inductor_off))
    # TorchAir's GE writes it; so may a user backend with fusion rules (examples/fusion_rules),
    # which must have written it during this run (not a file left in the directory before)
    if session.spec.mode == "compiled" and (
        backend == "torchair"
        or (":" in backend and _written_since(Path.cwd() / "fusion_result.json", session.status.started))
    ):
        result = fusion_result()
        if result is not None:
            session.status.record_fired("fusion_result", result)


def _written_since(path: Path, started: float) -> bool:
    return path.is_file() and path.stat().st_mtime >= started
