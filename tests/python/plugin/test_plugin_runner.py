"""The zero-change runner and the explicit API: backend redirection, steps, filters, module
records, statistics-only and byte budget, graph breaks and errors in status.json."""

import json

import numpy as np

from conftest import ok_run, uses


@uses("explicit-backend/user-backend")
def test_runner_redirects_explicit_backend_and_options_of_an_unmodified_script(plugin_runs):
    run = ok_run(plugin_runs, "explicit-backend/user-backend")
    graphs = [json.loads(line) for line in (run.run_dir / "user_backend.jsonl").read_text().splitlines()]
    assert len(graphs) == 2, "both compiled callables must reach the spec's backend"
    ops = " ".join(op for g in graphs for op in g["ops"])
    assert "relu" in ops and "tanh" in ops
    status = run.status
    requested = [c["requested"] for c in status["compile_calls"]]
    assert {"backend": "'inductor'", "mode": "'max-autotune'", "fullgraph": "True"} in requested
    assert any("options" in r for r in requested)
    assert status["graphs"]["count"] == 2 and "inductor_counters" not in status["switches"]["fired"]
    assert status["steps"] == 2  # each compiled callable's call is a step


@uses("mlp/aot_eager", "mlp/inductor")
def test_same_script_runs_under_the_backend_the_spec_names(plugin_runs):
    fx = ok_run(plugin_runs, "mlp/aot_eager")
    inductor = ok_run(plugin_runs, "mlp/inductor")
    assert fx.dump.header["backend"] == "aot_eager" and fx.dump.header["level"] == "fx"
    assert not any("buffer" in r for r in fx.dump.tensors)
    assert "inductor_counters" not in fx.status["switches"]["fired"]
    assert all("buffer" in r for r in inductor.dump.ops())


@uses("mlp/steps")
def test_steps_filter_dumps_only_the_chosen_step_but_keeps_all_final_outputs(plugin_runs):
    run = ok_run(plugin_runs, "mlp/steps")
    assert run.status["steps"] == 3 and len(run.status["calls"]) == 3
    assert {r["step"] for r in run.dump.tensors} == {1}
    assert {r["io"] for r in run.dump.tensors} == {"output"}
    assert [r["step"] for r in run.outputs.tensors] == [0, 1, 2]
    step1_final = next(r for r in run.dump.tensors if r["kind"] == "final")
    np.testing.assert_array_equal(run.dump.load(step1_final), run.outputs.load(run.outputs.tensors[1]))


@uses("mlp/filtered")
def test_include_and_exclude_filters(plugin_runs):
    ops = ok_run(plugin_runs, "mlp/filtered").dump.ops()
    assert [r["op_key"] for r in ops] == ["layers.0/aten.addmm.default#0", "layers.2/aten.addmm.default#0"]


@uses("mlp/modules")
def test_module_records_without_op_records(plugin_runs):
    dump = ok_run(plugin_runs, "mlp/modules").dump
    kinds = {r["kind"] for r in dump.tensors}
    assert kinds == {"module", "final"}
    keys = [r["op_key"] for r in dump.tensors if r["kind"] == "module"]
    assert keys[:3] == ["layers.0#0", "layers.1#0", "layers.2#0"] and "layers#0" in keys


@uses("mlp/autocast")
def test_autocast_and_determinism(plugin_runs):
    run = ok_run(plugin_runs, "mlp/autocast")
    dtypes = {r["op_key"].split("/")[-1].split("#")[0]: r["dtype"] for r in run.dump.ops()}
    assert dtypes["aten.addmm.default"] == "torch.bfloat16"  # autocast lowers matmuls
    assert "aten._to_copy.default" in dtypes  # through the casts it inserts
    assert run.outputs.tensors[0]["dtype"] == "torch.bfloat16"
    assert run.status["ran"]["autocast"] == "bfloat16"
    assert run.status["spec"]["deterministic"] is True


@uses("mlp/stats", "mlp/eager")
def test_statistics_only_run(plugin_runs):
    stats = ok_run(plugin_runs, "mlp/stats")
    full = ok_run(plugin_runs, "mlp/eager")
    assert not list((stats.run_dir / "dump" / "tensors").iterdir())
    assert all("file" not in r for r in stats.dump.tensors)
    assert [r["stats"] for r in stats.dump.tensors] == [r["stats"] for r in full.dump.tensors]
    assert stats.outputs.tensors[0]["file"], "final outputs stay full tensors"


@uses("mlp/budget")
def test_byte_budget_run(plugin_runs):
    run = ok_run(plugin_runs, "mlp/budget")
    dump = run.dump
    assert dump.budget["limit_bytes"] == 20000 and dump.budget["written_bytes"] <= 20000
    with_file = [r for r in dump.tensors if "file" in r]
    assert with_file and len(with_file) < len(dump.tensors)
    files = {r["file"] for r in with_file}  # records of equal contents share one file
    written = sum((dump.root / file).stat().st_size for file in files)
    assert written < 20000 + 128 * len(files)  # data plus .npy headers
    assert all(r["not_kept"] == "budget" for r in dump.tensors if "file" not in r)
    assert dump.end is not None and run.status["dump"]["budget_reached"] is True
    assert run.status["dump"]["not_kept"] == {"stats_only": 0, "budget": len(dump.tensors) - len(with_file)}


@uses("explicit/eager")
def test_explicit_api_marks_steps(plugin_runs):
    run = ok_run(plugin_runs, "explicit/eager")
    assert [r["step"] for r in run.outputs.tensors] == [0, 5, 7]
    assert {r["step"] for r in run.dump.tensors} == {0, 5, 7}
    by_step = {}
    for r in run.dump.ops():
        by_step.setdefault(r["step"], []).append(r["op_key"])
    assert by_step[0] == by_step[5] == by_step[7], "op keys restart in every step"


@uses("graph_break/aot_eager")
def test_graph_breaks_are_counted_and_graphs_numbered(plugin_runs):
    run = ok_run(plugin_runs, "graph_break/aot_eager")
    graphs = run.status["graphs"]
    assert graphs["count"] == 2 and graphs["graph_breaks"] >= 1 and graphs["break_reasons"]
    assert {r["graph"] for r in run.dump.ops()} == {0, 1}
    assert len(graphs["compile_seconds"]) == 2


@uses("failing/aot_eager")
def test_error_is_reported_with_traceback(plugin_runs):
    run = plugin_runs.get("failing/aot_eager")
    assert run.returncode == 1
    status = run.status
    assert status["state"] == "error" and status["exit_code"] == 1
    (error,) = status["errors"]
    assert error["type"] == "RuntimeError" and "planted failure in forward" in error["message"]
    assert "failing.py" in error["traceback"]
    assert "planted failure in forward" in run.stderr
