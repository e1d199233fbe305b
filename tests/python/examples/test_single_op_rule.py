"""examples/single_op_rule: a fusion rule that rewrites GELU even alone in its graph. The
backend's rules recognise both spellings of their op (checked on real Dynamo graphs, no
Inductor compile); then the standard workflow end to end: it stops at the single-op check,
names the op, attributes it to GeluFusionPass by a rule search over that one-op graph alone,
and the switch file it writes fixes the op (single-op run again with it)."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from example_runs import EXAMPLES, PYTHON, dynamo_graph, example_model, plugin_env, rule_counts, run_module
from fixtures.dump_reader import read_dump

rule_model = example_model("single_op_rule")
import rule_backend as rb  # noqa: E402

GELU = "aten.gelu.default"


def test_rules_fire_on_the_model_graph_and_on_one_op_graphs():
    torch.manual_seed(0)
    block, x = rule_model.Block().eval(), torch.randn(8, 32)
    model_graph, _ = dynamo_graph(block, x)
    assert rule_counts(rb.fuse(model_graph, {})) == {
        "GeluFusionPass": "1",
        "LayerNormFusionPass": "1",
        "TbeEltwiseFusionPass": "2",  # the (fused) GELU and the residual add
    }
    one_op, _ = dynamo_graph(lambda t: torch.ops.aten.gelu.default(t), x)
    assert rule_counts(rb.fuse(one_op, {})) == {"GeluFusionPass": "1", "TbeEltwiseFusionPass": "1"}
    assert (one_op(x)[0] - F.gelu(x)).abs().max() > 1e-3  # the planted FastGelu
    norm, _ = dynamo_graph(lambda t: torch.ops.aten.native_layer_norm.default(t, [32], None, None, 1e-5), x)
    assert rule_counts(rb.fuse(norm, {})) == {"LayerNormFusionPass": "1"}
    fixed, _ = dynamo_graph(lambda t: torch.ops.aten.gelu.default(t), x)
    assert rule_counts(rb.fuse(fixed, {"GraphFusion": {"GeluFusionPass": "off"}})) == {"TbeEltwiseFusionPass": "1"}
    torch.testing.assert_close(fixed(x)[0], F.gelu(x))


@pytest.fixture(scope="module")
def diagnosis(diagnose_bin, tmp_path_factory, inductor_cache):
    out = tmp_path_factory.mktemp("single_op_rule")
    env = dict(plugin_env(inductor_cache), DIAGNOSE_PYTHON=PYTHON)
    done = subprocess.run(
        [str(diagnose_bin), str(EXAMPLES / "single_op_rule" / "workflow.yaml"), "--output-dir", str(out), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return done, run_dir, json.loads((run_dir / "report.json").read_text())


def test_the_verdict_names_the_op_the_rule_and_the_switch_file(diagnosis):
    done, run_dir, report = diagnosis
    verdict = report["verdict"]
    step = next(step for step in report["steps"] if step["id"] == "single_op")
    assert done.returncode == 1, done.stderr[-3000:]
    assert (verdict["category"], verdict["culprit"], step["id"]) == ("single_op_graph_defect", GELU, "single_op")
    workaround = run_dir / "steps" / "single_op" / "rules" / "fusion_switch.json"
    assert step["metrics"]["rules"] == ["GeluFusionPass"]
    assert step["metrics"]["rule_conclusion"] == "culprits_found"
    assert step["metrics"]["workaround"] == str(workaround)
    assert (
        f"wrong in graph mode: {GELU}; caused by fusion rule GeluFusionPass: switching it off fixes it, "
        f"switch file {workaround}" in verdict["summary"]
    ), verdict["summary"]
    assert json.loads(workaround.read_text()) == {"Switch": {"GraphFusion": {"GeluFusionPass": "off"}}}
    assert any(f["op"] == "GeluFusionPass" for f in verdict["findings"]), verdict["findings"]
    assert any(GELU in (f.get("op") or "") + f["message"] for f in verdict["findings"]), verdict["findings"]
    assert verdict["reproduce"], "a verdict without the commands that reproduce it"
    # the search compiled the failing op alone: a handful of one-op trials
    trials = [run for run in step["runs"] if run["name"].startswith("t")]
    assert len(trials) == step["metrics"]["rule_trials"] <= 12
    assert all(run["argv"][-2:] == ["--ops", GELU] for run in trials)
    table = next(e["value"] for e in step["evidence"] if e["name"].startswith("rule search trials"))
    assert {row["outcome"] for row in table if row["rules_off"] == "GeluFusionPass"} == {"pass"}


def test_the_switch_file_fixes_the_op(diagnosis, inductor_cache, tmp_path):
    _, run_dir, report = diagnosis
    workaround = run_dir / "steps" / "single_op" / "rules" / "fusion_switch.json"
    (tmp_path / "switches.json").write_text(json.dumps({"fusion_switch_file": str(workaround)}))
    # the eager run single_op read: its own, or the one it shared with an earlier step
    step = next(step for step in report["steps"] if step["id"] == "single_op")
    eager = Path(next(run["dump_dir"] for run in step["runs"] if run["name"] == "eager")).parent
    command = ["single-op", "--from", str(eager), "--out", str(tmp_path / "out")]
    command += ["--backend", "rule_backend:backend", "--switches", str(tmp_path / "switches.json"), "--ops", GELU]
    proc = run_module(command, inductor_cache, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    eager, graph = read_dump(tmp_path / "out" / "eager"), read_dump(tmp_path / "out" / "graph")
    (eager_gelu,), (graph_gelu,) = eager.ops(), graph.ops()
    np.testing.assert_allclose(graph.load(graph_gelu), eager.load(eager_gelu), rtol=1e-5, atol=1e-6)
    fired = json.loads((tmp_path / "fusion_result.json").read_text())
    assert rule_counts(fired["session_and_graph_id_0_0"]) == {"TbeEltwiseFusionPass": "1"}
