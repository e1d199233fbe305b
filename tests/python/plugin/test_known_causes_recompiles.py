"""status.json records the compiled run's recompiles and the guards that failed, which the
known cause dynamic_shape_recompiles reads (tests/steps/known_causes_test.cc)."""

from __future__ import annotations

from conftest import CATALOG, HERE, RunConfig, ok_run, uses

RUNS = {"changing_shapes/aot_eager": RunConfig(str(HERE / "scripts" / "changing_shapes.py"), {"backend": "aot_eager"})}
CATALOG.update(RUNS)


@uses("changing_shapes/aot_eager")
def test_a_recompile_and_its_failed_guard_are_recorded(plugin_runs):
    graphs = ok_run(plugin_runs, "changing_shapes/aot_eager").status["graphs"]
    assert graphs["recompiles"] == 1, graphs
    (reason,) = graphs["recompile_reasons"]
    assert "size mismatch" in reason and "expected 8, actual 4" in reason, reason
    assert graphs["graph_breaks"] == 0
