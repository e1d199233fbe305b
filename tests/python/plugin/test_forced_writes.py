"""Forcing a lost state write (run spec isolation.eager_writes, the culprit confirmation of a state
defect): the nodes that write a graph input in place, found through views, item assignments and
schemas; and a real run of examples/kv_cache_decode, whose backend drops the cache write, with the
writes of its buffers forced: every output and every buffer after every call then match eager."""

from __future__ import annotations

import json
import operator
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import fx

from conftest import REPO, RunConfig, launch, plugin_env
from diagnose_pytorch.checks.isolation import written_input
from diagnose_pytorch.spec import RunSpec, SpecError
from fixtures.dump_reader import read_dump

EXAMPLE = REPO / "examples" / "kv_cache_decode"
STATE = ["buffers.k_cache", "buffers.v_cache", "buffers.position"]


def writes(cache, index, x):
    cache.index_copy_(0, index, x)  # an in-place method
    cache.view(-1).add_(1)  # through a view
    torch.ops.aten.mul_.Tensor(cache, 2)  # an op whose schema writes its first argument
    x.add(1)  # no write
    return x.clone().sub_(1)  # a write into a value of the graph, not an input


def test_the_writers_of_a_graph_input_are_found_through_views_and_schemas():
    graph = fx.symbolic_trace(writes).graph
    cache, _, x = (n for n in graph.nodes if n.op == "placeholder")
    with graph.inserting_after(x):
        graph.call_function(operator.setitem, (cache, 1, x))  # an item assignment (Dynamo traces it so)
    written = {node.name: getattr(written_input(node), "name", None) for node in graph.nodes}
    assert written["index_copy_"] == written["setitem"] == written["add_"] == written["mul__tensor"] == "cache"
    assert written["add"] is None and written["sub_"] is None and written["view"] is None


def test_eager_writes_must_be_state_paths(tmp_path):
    with pytest.raises(SpecError, match="isolation.eager_writes must be a list of state paths"):
        RunSpec.from_dict({"output_dir": str(tmp_path), "isolation": {"eager_writes": "buffers.k_cache"}})


def run(name: str, spec: dict, root: Path, cache_dir: Path) -> Path:
    path = os.pathsep.join([str(EXAMPLE), plugin_env(cache_dir)["PYTHONPATH"]])  # the example's backend
    config = RunConfig(str(EXAMPLE / "model.py"), spec, args=["--steps", "3"], env={"PYTHONPATH": path})
    proc, run_dir = launch(name, config, root, cache_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-4000:]
    return run_dir


def records(run_dir: Path) -> dict:
    """(call, path) -> value of every final output and state record."""
    outputs = read_dump(run_dir / "outputs")
    return {(r["step"], r["path"]): outputs.load(r) for r in outputs.tensors + outputs.state if r.get("file")}


@pytest.mark.e2e  # two runs of the model
def test_forcing_the_lost_cache_write_makes_every_call_match_eager(tmp_path, cache_dir):
    isolation = {"eager_nodes": [], "eager_writes": STATE}
    forced = run("forced", {"backend": "cache_write_backend:backend", "isolation": isolation}, tmp_path, cache_dir)
    eager = run("eager", {"mode": "eager", "dump": {"level": "none"}}, tmp_path, cache_dir)
    status = json.loads((forced / "status.json").read_text())["isolation"]
    assert status["forced_writes"] == {
        "buffers.k_cache": ["g0.index_copy_"],
        "buffers.v_cache": ["g0.index_copy__1"],
        "buffers.position": ["g0.add_"],
    }
    assert not set(status["compiled"]) & {"g0.index_copy_", "g0.index_copy__1", "g0.add_"}
    got, want = records(forced), records(eager)
    assert got.keys() == want.keys() and (2, "buffers.position") in got
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=str(key))
    assert got[(2, "buffers.position")].tolist() == [3]
