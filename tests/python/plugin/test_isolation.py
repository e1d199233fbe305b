"""Subgraph isolation (the trial process of `subgraph_isolate`): real runs of a tiny two-graph model
(data/isolation/tiny_model.py) under a backend with a planted graph-only defect
(data/isolation/fma_backend.py: an add that reads a multiply of its own graph is off by 0.05)
and under Inductor, each split as `isolation.eager_nodes` says; a dynamic=True graph whose
`.item()` scalar is read on both sides of a split (data/isolation/scaled_model.py); and the
repro.py a run writes, run on its own."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import PYTHON, RunConfig, launch, plugin_env
from diagnose_pytorch.spec import RunSpec, SpecError
from fixtures.plugin_runs import Run, RunPool

DATA = Path(__file__).resolve().parent / "data" / "isolation"
SCRIPT = str(DATA / "tiny_model.py")
SCALED = str(DATA / "scaled_model.py")
FMA = "fma_backend:fma_backend"
WRAPPING = "wrapping_backend:wrapping_backend"  # a user pass, then compile_fx
NODES = [  # id, op, module
    ("g0.linear", "torch._C._nn.linear", "fc1"),
    ("g0.h", "torch.relu", ""),
    ("g0.scaled", "operator.mul", ""),
    ("g0.mixed", "operator.add", ""),
    ("g1.linear", "torch._C._nn.linear", "fc2"),
    ("g1.split", "method split", ""),
    ("g1.low", "operator.getitem", ""),
    ("g1.high", "operator.getitem", ""),
    ("g1.tanh", "torch.tanh", ""),
    ("g1.sub", "operator.sub", ""),
]
ALL = [node for node, _, _ in NODES]
SELECTIONS = ["g1.low", "g1.high"]  # of split's outputs: they go where split goes
CHOICES = [n for n in ALL if n not in SELECTIONS]
PAIR = ["g0.scaled", "g0.mixed"]
# graph 0: compiled, eager, compiled; graph 1: compiled up to the selections (g1.low follows
# split, whatever eager_nodes says), then eager
HALF = ["g0.h", "g1.low", "g1.tanh", "g1.sub"]


def isolated(eager_nodes: list[str], backend: str = FMA, **isolation) -> dict:
    return {"backend": backend, "isolation": {"eager_nodes": eager_nodes, **isolation}}


# in the order the tests need them (the repro test, first, then replays while the others run)
CATALOG = {
    # observing an eager node (g1.tanh, inside its piece) and a compiled one (g0.linear: never)
    "inductor-half": RunConfig(SCRIPT, isolated(HALF, "inductor", observe=["g1.tanh", "g0.linear"]), cost=6),
    "pair-compiled": RunConfig(SCRIPT, isolated([n for n in ALL if n not in PAIR], repro=True)),
    "eager": RunConfig(SCRIPT, {"mode": "eager", "dump": {"level": "none"}}),
    "all-compiled": RunConfig(SCRIPT, isolated([])),
    "plain": RunConfig(SCRIPT, {"backend": FMA}),
    "all-eager": RunConfig(SCRIPT, isolated(ALL)),
    # graph 1: split's outputs cross from an eager piece into a compiled one
    "pair-eager": RunConfig(SCRIPT, isolated([*PAIR, "g1.split"])),
    # dumps whose records name the candidates they were traced from (graph_nodes)
    "fx-dumped": RunConfig(SCRIPT, {"backend": "inductor", "dump": {"level": "fx"}}),
    "inductor-dumped": RunConfig(SCRIPT, {"backend": "inductor", "dump": {"level": "compiled"}}, cost=6),
    "wrapping-dumped": RunConfig(SCRIPT, {"backend": WRAPPING, "dump": {"level": "compiled"}}, cost=6),
    "wrapping-half": RunConfig(SCRIPT, isolated(HALF, WRAPPING), cost=6),
    # dynamic=True: the linear eager splits the readers of the scaling's .item() in two pieces
    "scaled-split": RunConfig(SCALED, isolated(["g0.linear"], "inductor"), cost=4),
    "scaled-eager": RunConfig(SCALED, {"mode": "eager", "dump": {"level": "none"}}),
}


class IsolationRuns(RunPool):
    def _run(self, name: str) -> Run:
        proc, run_dir = launch(
            name, CATALOG[name], self.root, self.cache_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        stdout, stderr = proc.communicate(timeout=600)
        return Run(name, run_dir, run_dir, proc.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cache_dir):
    pool = IsolationRuns(CATALOG, tmp_path_factory.mktemp("isolation"), cache_dir)
    pool.start(CATALOG)
    yield pool
    pool.shutdown()


def ok(runs: IsolationRuns, name: str) -> Run:
    run = runs.get(name)
    assert run.returncode == 0 and run.status["state"] == "ok", run.describe()
    return run


def outputs(runs: IsolationRuns, name: str) -> list[np.ndarray]:
    return ok(runs, name).output_arrays()


def test_the_repro_fails_with_the_backend_and_passes_eagerly(runs, cache_dir, tmp_path):
    run = ok(runs, "pair-compiled")
    assert run.status["isolation"]["repro"] == "repro/repro.py"
    repro = run.run_dir / "repro" / "repro.py"
    env = plugin_env(cache_dir, {"PYTHONPATH": ""})  # repro.py puts the backend's directory on sys.path

    def replay(*args: str) -> subprocess.Popen:
        return subprocess.Popen([PYTHON, str(repro), *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)

    failing, passing = replay(), replay("--backend", "eager")
    failing.stdout, passing.stdout = failing.communicate()[0], passing.communicate()[0]
    assert failing.returncode == 1, failing.stdout
    assert "g0.scaled, g0.mixed" in failing.stdout and "max abs error vs eager 5.000e-02" in failing.stdout
    assert passing.returncode == 0, passing.stdout
    assert not list((run.run_dir / "repro").rglob("*.pt")) and list((run.run_dir / "repro").rglob("*.npy"))


def test_every_candidate_is_listed_in_graph_order(runs):
    report = ok(runs, "all-compiled").status["isolation"]
    assert [(n["id"], n["op"], n["module"]) for n in report["nodes"]] == NODES
    assert [n["graph"] for n in report["nodes"]] == [0] * 4 + [1] * 6
    assert [n.get("follows") for n in report["nodes"] if n["id"] in SELECTIONS] == ["g1.split"] * 2
    assert report["nodes"][2]["source"].endswith("tiny_model.py:16")  # scaled = h * 0.5
    assert report["graphs"] == 2 and report["unmatched"] == []


def test_nothing_eager_is_the_plain_compiled_run(runs):
    assert ok(runs, "all-compiled").status["isolation"]["compiled"] == CHOICES
    pieces = ok(runs, "all-compiled").status["isolation"]["pieces"]
    assert pieces == [
        {"graph": 0, "nodes": ALL[:4], "compiled": True},
        {"graph": 1, "nodes": ALL[4:], "compiled": True},
    ]
    assert all(np.array_equal(a, b) for a, b in zip(outputs(runs, "all-compiled"), outputs(runs, "plain")))
    assert not np.allclose(outputs(runs, "plain")[0], outputs(runs, "eager")[0], atol=1e-3)  # the defect


def test_everything_eager_is_eager(runs):
    assert ok(runs, "all-eager").status["isolation"]["compiled"] == []
    assert all(np.array_equal(a, b) for a, b in zip(outputs(runs, "all-eager"), outputs(runs, "eager")))


def test_the_multiply_add_pair_alone_is_wrong_and_everything_else_right(runs):
    report = ok(runs, "pair-compiled").status["isolation"]
    assert report["compiled"] == PAIR
    assert report["pieces"][1] == {"graph": 0, "nodes": PAIR, "compiled": True}
    error = np.abs(outputs(runs, "pair-compiled")[0] - outputs(runs, "eager")[0]).max()
    assert error > 1e-3
    report = ok(runs, "pair-eager").status["isolation"]
    assert report["compiled"] == [n for n in CHOICES if n not in (*PAIR, "g1.split")]
    assert [p["nodes"] for p in report["pieces"][2:]] == [
        ["g1.linear"],
        ["g1.split", *SELECTIONS],
        ["g1.tanh", "g1.sub"],
    ]
    np.testing.assert_allclose(outputs(runs, "pair-eager")[0], outputs(runs, "eager")[0], rtol=0, atol=1e-6)


def test_an_observed_eager_node_records_its_value_of_each_call(runs):
    """isolation.observe: the eager piece's value of g1.tanh (its piece's output only for the
    recording), as tanh of what the compiled pieces before it made; a compiled node never."""
    run = ok(runs, "inductor-half")
    assert run.status["isolation"]["observed"] == {"g1.tanh": [0]}
    tanh = np.load(run.run_dir / "observed" / "g1.tanh" / "0.npy")
    sub = outputs(runs, "inductor-half")[0]  # g1.sub: tanh - high, the output
    assert tanh.shape == sub.shape and np.all(np.abs(tanh) <= 1) and not np.array_equal(tanh, sub)
    assert not (run.run_dir / "observed" / "g0.linear").exists()


def test_a_golden_record_names_the_node_whose_value_it_is(runs):
    """value_of: the ATen record whose value leaves its one Dynamo node (fc1's addmm for
    g0.linear), never one inside it."""
    value_of = {r["fx_nodes"][0]: r.get("value_of") for r in _records(ok(runs, "fx-dumped"))}
    assert value_of["tanh"] == "g1.tanh" and value_of["relu"] == "g0.h", value_of
    assert all(v is None or v in CHOICES for v in value_of.values()), value_of


def test_inductor_split_in_pieces_matches_eager(runs):
    report = ok(runs, "inductor-half").status["isolation"]
    assert report["compiled"] == [n for n in CHOICES if n not in HALF]
    assert [(p["nodes"], p["compiled"]) for p in report["pieces"]] == [
        (["g0.linear"], True),
        (["g0.h"], False),
        (PAIR, True),
        (["g1.linear", "g1.split", *SELECTIONS], True),
        (["g1.tanh", "g1.sub"], False),
    ]
    np.testing.assert_allclose(outputs(runs, "inductor-half")[0], outputs(runs, "eager")[0], rtol=1e-5, atol=1e-6)


def _records(run: Run) -> list[dict]:
    """The op records of the run's dump."""
    records = [json.loads(line) for line in (run.run_dir / "dump" / "manifest.jsonl").read_text().splitlines()]
    return [r for r in records if r["type"] == "tensor" and "fx_nodes" in r]


@pytest.mark.parametrize("name", ["fx-dumped", "inductor-dumped", "wrapping-dumped"])
def test_dumped_records_name_the_candidates_they_were_traced_from(runs, name):
    records = _records(ok(runs, name))
    assert records and all(set(r.get("graph_nodes", [])) <= set(ALL) for r in records)
    traced = {fx: r.get("graph_nodes") for r in records for fx in r["fx_nodes"]}
    assert "g1.tanh" in traced["tanh"] and all(traced.values())
    if name != "wrapping-dumped":  # there relu's buffer also computes the pass's second relu: not dumped
        assert "g0.h" in traced["relu"]
    if name == "fx-dumped":  # one ATen node each; every candidate that computes something is there
        assert all(len(r["graph_nodes"]) == 1 for r in records)
        assert {i for r in records for i in r["graph_nodes"]} == set(CHOICES)
    if name == "wrapping-dumped":  # the golden's names (alignment.py), never one the pass shifted
        golden = {r["op_key"] for r in _records(ok(runs, "fx-dumped"))}
        assert {r["op_key"] for r in records} <= golden


def test_graph_nodes_run_eagerly_through_a_user_backend_built_on_inductor(runs):
    """graph_nodes are the ids isolation.eager_nodes takes: the wrapping backend's graphs split
    where the plain Inductor run's were, the user's pass running on each compiled piece."""
    half = {i for r in _records(ok(runs, "wrapping-dumped")) for i in r["graph_nodes"] if i in HALF}
    assert {"g1.tanh", "g1.sub"} <= half <= set(HALF)
    report = ok(runs, "wrapping-half").status["isolation"]
    assert report["compiled"] == [n for n in CHOICES if n not in HALF] and report["unmatched"] == []
    assert [p["nodes"] for p in report["pieces"]] == [
        p["nodes"] for p in ok(runs, "inductor-half").status["isolation"]["pieces"]
    ]
    np.testing.assert_allclose(outputs(runs, "wrapping-half")[0], outputs(runs, "eager")[0], rtol=1e-5, atol=1e-6)


def test_a_dynamic_graph_splits_where_a_scalar_read_from_a_tensor_is_used_on_both_sides(runs):
    """Each piece that reads the `.item()` reads it itself (no scalar crosses pieces), every piece
    compiled once on Dynamo's symbolic inputs: one split graph serves both batch sizes."""
    report = ok(runs, "scaled-split").status["isolation"]
    assert report["graphs"] == 1
    assert [(p["nodes"], p["compiled"]) for p in report["pieces"]] == [
        (["g0.cos", "g0.item", "g0.h"], True),
        (["g0.linear"], False),
        (["g0.item", "g0.y", "g0.mul_1", "g0.sum_1", "g0.add"], True),
    ]
    assert report["compiled"] == ["g0.cos", "g0.h", "g0.y", "g0.mul_1", "g0.sum_1", "g0.add"]
    split, eager = outputs(runs, "scaled-split"), outputs(runs, "scaled-eager")
    assert [a.shape for a in split] == [(2, 8), (3, 8)]
    for got, want in zip(split, eager, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"isolation": {"eager_nodes": [], "nodes": []}}, "unknown key(s) in isolation: nodes"),
        ({"isolation": {"eager_nodes": "g0.mul"}}, "isolation.eager_nodes must be a list"),
        ({"isolation": {"eager_nodes": [3]}}, "isolation.eager_nodes must be a list"),
        ({"isolation": {"repro": "yes"}}, "isolation.repro must be true or false"),
        ({"isolation": {}, "dump": {"level": "aten"}}, "isolation runs with dump.level 'none'"),
        ({"isolation": {}, "dump": {"level": "fx"}}, "per-op dumps of split graphs are not supported"),
        ({"isolation": {}, "mode": "eager"}, "isolation needs mode 'compiled'"),
        ({"isolation": []}, "isolation must be a JSON object"),
    ],
)
def test_a_bad_isolation_spec_is_refused(spec, message, tmp_path):
    with pytest.raises(SpecError, match=re.escape(message)):
        RunSpec.from_dict({"output_dir": str(tmp_path), **spec})


def test_isolation_runs_with_the_final_outputs_only(tmp_path):
    spec = RunSpec.from_dict({"output_dir": str(tmp_path), "backend": "torchair", "isolation": {}})
    assert spec.dump_level() == "none" and spec.isolation.eager_nodes == [] and not spec.isolation.repro
