"""Every mode and backend runs each example through the zero-change runner and writes what
its dump level promises."""

import re

import numpy as np
import pytest

from conftest import EXAMPLES, ok_run, uses

CONFIGS = (
    "eager",
    "eager-backend",
    "aot_eager",
    "aot_eager_decomp_partition",
    "inductor",
    "torchair-ge",
    "torchair-fx",
)
FX_KEY = re.compile(r"^[A-Za-z_][\w]*-[\w.]+$")


# `eager` is eager mode; `eager-backend` is compiled mode with Dynamo's eager backend.
CASES = [
    pytest.param(ex, config, marks=uses(f"{ex}/{config}", f"{ex}/eager"), id=f"{ex}-{config}")
    for ex in EXAMPLES
    for config in CONFIGS
]


@pytest.mark.parametrize("ex, config", CASES)
def test_example_runs_and_dumps(plugin_runs, ex, config):
    run = ok_run(plugin_runs, f"{ex}/{config}")
    status = run.status
    assert status["state"] == "ok" and status["errors"] == []
    assert len(status["compile_calls"]) == 1, "the script's torch.compile call was not redirected"
    assert status["steps"] == 1 and len(status["calls"]) == 1
    eager_mode = config == "eager"
    assert status["graphs"]["count"] == (0 if eager_mode else 1)

    final = run.outputs.tensors
    assert final and all(r["kind"] == "final" and r["op_key"] == "output" for r in final)
    reference = ok_run(plugin_runs, f"{ex}/eager").outputs
    np.testing.assert_allclose(run.outputs.load(final[0]), reference.load(reference.tensors[0]), rtol=1e-4, atol=1e-5)

    if config.startswith("torchair"):
        check_torchair_layout(run, config)
        return
    dump = run.dump
    assert dump.end is not None and dump.end["records"] == len(dump.tensors) + len(dump.state)
    ops = dump.ops()
    assert len(ops) >= 5
    if eager_mode:
        assert dump.header["level"] == "aten"
        assert all(re.fullmatch(r"([\w.]+/)?aten\.[\w.]+#\d+", r["op_key"]) for r in ops)
        assert any(r["module"] for r in ops), "no op attributed to a submodule"
    elif config == "inductor":
        assert dump.header["level"] == "compiled"
        assert all(r["buffer"].startswith("buf") and r["fx_nodes"] for r in ops)
        assert all(r["io"] == "output" for r in dump.tensors)
    else:
        assert dump.header["level"] == "fx"
        assert all(FX_KEY.match(r["op_key"]) and r["fx_nodes"] == [r["op_key"].split("-")[0]] for r in ops)
        assert dump.ops(io="input"), "FX-level dumps hold node inputs too"
    seqs = [r["seq"] for r in dump.tensors]
    assert seqs == sorted(seqs)
    for record in dump.tensors[:50]:
        assert list(dump.load(record).shape) == record["shape"]


def check_torchair_layout(run, config):
    root = run.run_dir / "dump"
    assert not (root / "manifest.jsonl").exists()
    if config == "torchair-fx":
        files = list((root / "fx_dump" / "worldsize1_global_rank0" / "graph_1" / "0").glob("*.npy"))
        assert files and all(
            re.fullmatch(r"\w+-[\w.]+\.(INPUT|OUTPUT)\.\d+(\.\d+)?\.\d{20}\.npy", f.name) for f in files
        )
    else:
        assert list((root / "ge_dump").glob("dynamo_original_graph_1_rank_0_pid_*_ts_*.txt"))
        tokens = list((root / "ge_dump" / "worldsize1_global_rank0").glob("*/0/graph_1/1/0"))
        assert len(tokens) == 1 and len(list(tokens[0].iterdir())) >= 3
