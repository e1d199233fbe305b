"""examples/lowering_defect and the single-op check: the op whose Inductor decomposition is
wrong is caught on its real recorded inputs; the others pass; one op's compile error or crash
is reported while the rest of the batch is kept. With Inductor the ops' one-op graphs are
compiled together first: that gives the records compiling each alone gives, and the wrong op
is checked again alone."""

import json
import subprocess

import numpy as np

from example_runs import HERE, PYTHON, TIMEOUT, example_cache, example_runs, needs, plugin_env, run_module  # noqa: F401
from fixtures.dump_reader import read_dump

SOFTPLUS = "diagnose_example.softplus.default"
OPS = ["aten.t.default", "aten.addmm.default", "aten.tanh.default", "aten.div.Tensor", SOFTPLUS, "aten.mean.dim"]


def single_op(eager, out, backend, ops, cache, env=None):
    proc = run_module(
        ["single-op", "--from", str(eager.run_dir), "--out", str(out), "--backend", backend, "--ops", ",".join(ops)],
        cache,
        out.parent,
        env,
    )
    return proc


def probe(example_runs, cache, tmp_path, backend, ops):
    """The single-op check of the eager run with one of probe_backends.py's backends (found
    through PYTHONPATH): its output directory and the finished process."""
    out = tmp_path / backend
    eager = example_runs.get("lowering/eager")
    return out, single_op(eager, out, f"probe_backends:{backend}", ops, cache, {"PYTHONPATH": str(HERE)})


def outputs_by_key(dump):
    return {(r["op_key"], r["index"]): np.load(dump / r["file"]).reshape(r["shape"]) for r in read_dump(dump).tensors}


@needs("lowering/eager")
def test_ops_lists_the_distinct_ops_in_first_seen_order(example_runs, example_cache):
    eager = example_runs.get("lowering/eager")
    proc = run_module(["ops", "--from", str(eager.run_dir)], example_cache, eager.cwd)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        {"op": op, "calls": 2 if op in ("aten.t.default", "aten.addmm.default") else 1} for op in OPS
    ]


@needs("lowering/eager")
def test_single_op_check_catches_the_wrong_lowering_on_recorded_inputs(example_runs, example_cache, tmp_path):
    eager = example_runs.get("lowering/eager")
    out = tmp_path / "single"
    proc = single_op(eager, out, "inductor", [SOFTPLUS, "aten.tanh.default"], example_cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "single_op.json").read_text())
    assert [(o["op"], o["status"], o["calls"]) for o in result["ops"]] == [
        (SOFTPLUS, "ok", 1),
        ("aten.tanh.default", "ok", 1),
    ]
    golden, target = outputs_by_key(out / "eager"), outputs_by_key(out / "graph")
    assert golden.keys() == target.keys() == {(f"{SOFTPLUS}#0", 0), ("aten.tanh.default#0", 0)}
    np.testing.assert_array_equal(golden[("aten.tanh.default#0", 0)], target[("aten.tanh.default#0", 0)])
    eager_softplus, graph_softplus = golden[(f"{SOFTPLUS}#0", 0)], target[(f"{SOFTPLUS}#0", 0)]
    assert np.isfinite(eager_softplus).all() and np.isinf(graph_softplus).any()
    events = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert [(e.get("op"), e["event"]) for e in events] == [
        (None, "batched_compile"),
        (SOFTPLUS, "start"),
        (SOFTPLUS, "done"),
        ("aten.tanh.default", "start"),
        ("aten.tanh.default", "done"),
    ]


def records(out):
    """single_op.json's per-op records, without their seconds and how they were compiled."""
    kept = ("op", "calls", "status", "message", "op_keys")
    return [{k: o[k] for k in kept} for o in json.loads((out / "single_op.json").read_text())["ops"]]


@needs("lowering/eager")
def test_a_batched_compile_gives_the_records_of_compiling_each_op_alone(example_runs, example_cache, tmp_path):
    eager = example_runs.get("lowering/eager")
    batched, alone = tmp_path / "batched", tmp_path / "alone"
    proc = single_op(eager, batched, "inductor", OPS, example_cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_module(
        ["single-op", "--from", str(eager.run_dir), "--out", str(alone), "--backend", "inductor"]
        + ["--ops", ",".join(OPS), "--batch-graphs", "0"],
        example_cache,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert records(batched) == records(alone)
    # the same results, bit for bit: each graph compiled in the batch as it compiles alone
    golden, graph, graph_alone = (outputs_by_key(d) for d in (batched / "eager", batched / "graph", alone / "graph"))
    assert graph.keys() == graph_alone.keys() == golden.keys()
    for key in graph:
        np.testing.assert_array_equal(graph[key], graph_alone[key], err_msg=str(key))
    result = json.loads((batched / "single_op.json").read_text())
    [batch] = result["batched_compiles"]
    assert (batch["ops"], batch["graphs"], batch["error"]) == (len(OPS), 8, ""), batch
    ops = {o["op"]: o for o in result["ops"]}
    # the wrong op (inf where eager is finite) is checked again alone: its record is that compile's
    assert (ops[SOFTPLUS]["settled_in_batched_compile"], ops[SOFTPLUS]["compiles"]) == (False, 1)
    assert batch["settled"] == sum(o["settled_in_batched_compile"] for o in ops.values()) >= 4, ops
    for o in ops.values():
        assert o["batched_compile"] == 1 and o["compiles"] == (0 if o["settled_in_batched_compile"] else 1), o
    assert json.loads((alone / "single_op.json").read_text())["batched_compiles"] == []


# torch.compile of the single-op check's batched function (named `batch`) fails when called.
FAILING_BATCH = """
import sys
import torch
from diagnose_pytorch.__main__ import main

compile_ = torch.compile


def compile_or_fail(fn, **options):
    if fn.__name__ != "batch":
        return compile_(fn, **options)

    def failing(*tensors):
        raise RuntimeError("planted batch failure")

    return failing


torch.compile = compile_or_fail
sys.exit(main(sys.argv[1:]))
"""


@needs("lowering/eager")
def test_a_failed_batched_compile_leaves_every_op_to_its_compile_alone(example_runs, example_cache, tmp_path):
    eager = example_runs.get("lowering/eager")
    ops = [SOFTPLUS, "aten.tanh.default", "aten.div.Tensor"]
    out = tmp_path / "single"
    proc = subprocess.run(
        [PYTHON, "-c", FAILING_BATCH, "single-op", "--from", str(eager.run_dir), "--out", str(out)]
        + ["--backend", "inductor", "--ops", ",".join(ops)],
        cwd=tmp_path,
        env=plugin_env(example_cache),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "single_op.json").read_text())
    [batch] = result["batched_compiles"]
    assert (batch["settled"], batch["error"]) == (0, "RuntimeError: planted batch failure"), batch
    assert [(o["op"], o["status"], o["compiles"], o["settled_in_batched_compile"]) for o in result["ops"]] == [
        (op, "ok", 1, False) for op in ops
    ]
    golden, graph = outputs_by_key(out / "eager"), outputs_by_key(out / "graph")
    assert np.isinf(graph[(f"{SOFTPLUS}#0", 0)]).any() and np.isfinite(golden[(f"{SOFTPLUS}#0", 0)]).all()


@needs("lowering/eager")
def test_a_compile_error_is_recorded_and_the_other_ops_still_run(example_runs, example_cache, tmp_path):
    probed = ["aten.tanh.default", "aten.div.Tensor", "aten.addmm.default"]
    out, proc = probe(example_runs, example_cache, tmp_path, "refusing_backend", probed)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ops = {o["op"]: o for o in json.loads((out / "single_op.json").read_text())["ops"]}
    assert ops["aten.tanh.default"]["status"] == "compile_error"
    assert "no tanh here" in ops["aten.tanh.default"]["message"]
    assert ops["aten.div.Tensor"]["status"] == ops["aten.addmm.default"]["status"] == "ok"
    # addmm is checked once per input signature: proj and score multiply matrices of other shapes
    assert {k for k, _ in outputs_by_key(out / "graph")} == {
        "aten.div.Tensor#0",
        "proj/aten.addmm.default#0",
        "score/aten.addmm.default#0",
    }


@needs("lowering/eager")
def test_progress_names_the_op_that_was_running_when_the_process_died(example_runs, example_cache, tmp_path):
    probed = ["aten.div.Tensor", "aten.tanh.default", "aten.mean.dim"]
    out, proc = probe(example_runs, example_cache, tmp_path, "aborting_backend", probed)
    assert proc.returncode < 0
    events = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    assert [(e["op"], e["event"]) for e in events] == [
        ("aten.div.Tensor", "start"),
        ("aten.div.Tensor", "done"),
        ("aten.tanh.default", "start"),
    ]
    done = json.loads((out / "single_op.json").read_text())["ops"]
    assert [o["op"] for o in done] == ["aten.div.Tensor"]
    assert [r["op_key"] for r in read_dump(out / "graph").tensors] == ["aten.div.Tensor#0"]


@needs("lowering/eager")
def test_bad_arguments_exit_2_with_a_message(example_runs, example_cache, tmp_path):
    eager = example_runs.get("lowering/eager")
    proc = single_op(eager, tmp_path / "x", "eager", ["aten.nope.default"], example_cache)
    assert proc.returncode == 2 and "aten.nope.default" in proc.stderr
    proc = run_module(["ops", "--from", str(tmp_path)], example_cache, tmp_path)
    assert proc.returncode == 2 and "no eager dump" in proc.stderr
