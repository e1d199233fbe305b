"""examples/fusion_rules: the fusion backend's rules, switch file, fusion_result.json and fault
controls. The rewrites are checked on the real Dynamo graph of the example model, run eagerly
(no Inductor compile); two plugin runs check the whole path through Inductor."""

import copy
import json
import subprocess

import numpy as np
import pytest
import torch

from example_runs import (  # noqa: F401
    EXAMPLES,
    PYTHON,
    block_graph,
    example_cache,
    example_model,
    example_runs,
    needs,
    rule_counts,
    run_rewritten,
)

fusion_model = example_model("fusion_rules")
import fusion_backend as fb  # noqa: E402
import mock_ge  # noqa: E402

ALL_RULES = {
    "MatMulBiasAddFusionPass": "3",
    "GeluFusionPass": "1",
    "LayerNormFusionPass": "1",
    "SoftmaxFusionPass": "1",
    "TbeEltwiseFusionPass": "1",
}


@pytest.fixture(scope="module")
def model_graph():
    """The example's Dynamo graph, its inputs and the eager reference output."""
    return block_graph(fusion_model, 8, 16)[:3]


def fused(model_graph, switches=None, faults=""):
    gm, inputs, reference = model_graph
    result, out, _ = run_rewritten(gm, inputs, lambda g: fb.fuse(g, switches or {}, fb.read_faults(faults)))
    return result, float((out - reference).abs().max())


def test_every_rule_fires_and_the_clean_rewrites_are_exact(model_graph):
    result, error = fused(model_graph)
    assert rule_counts(result) == ALL_RULES
    assert set(result["ub_fusion"]) == {"TbeEltwiseFusionPass"}
    assert all(c["match_times"] == c["effect_times"] for g in result.values() for c in g.values())
    assert error < 1e-5
    gm = copy.deepcopy(model_graph[0])
    fb.fuse(gm, {}, fb.read_faults(""))
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert {
        mock_ge.fused_gelu,
        mock_ge.fused_softmax,
        mock_ge.fused_layer_norm,
        fb.fused_silu,
        mock_ge.fused_matmul_bias_add,
    } <= targets and torch.erf not in targets


def test_planted_default_is_gelu_wrong(model_graph, monkeypatch):
    monkeypatch.delenv(fb.FAULTS_ENV, raising=False)
    faults = fb.read_faults(None)
    assert faults.wrong == {"GeluFusionPass"}
    result, error = fused(model_graph, faults=fb.PLANTED_FAULTS)
    assert rule_counts(result) == ALL_RULES and error > 1e-2
    _, error_without_gelu = fused(model_graph, {"GraphFusion": {"GeluFusionPass": "off"}}, fb.PLANTED_FAULTS)
    assert error_without_gelu < 1e-5


@pytest.mark.parametrize("rule", sorted(ALL_RULES))
def test_each_rule_can_be_faulted_wrong_beyond_fp32_tolerance(model_graph, rule):
    _, error = fused(model_graph, faults=f"wrong:{rule}")
    assert error > 1e-4


def test_pair_fault_is_wrong_only_when_both_rules_fire(model_graph):
    pair = "pair:SoftmaxFusionPass+LayerNormFusionPass"
    assert fused(model_graph, faults=pair)[1] > 1e-4
    alone = fused(model_graph, {"GraphFusion": {"LayerNormFusionPass": "off"}}, pair)
    assert "SoftmaxFusionPass" in rule_counts(alone[0]) and alone[1] < 1e-5


def test_sticky_rule_ignores_the_switch_file(model_graph):
    result, error = fused(
        model_graph,
        {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}},
        "sticky:GeluFusionPass,wrong:GeluFusionPass",
    )
    assert rule_counts(result) == {"GeluFusionPass": "1"} and error > 1e-2


@pytest.mark.parametrize("faults", ["wrong:NoSuchPass", "pair:GeluFusionPass", "melt:GeluFusionPass"])
def test_bad_fault_controls_are_errors(faults):
    with pytest.raises(mock_ge.FusionConfigError, match="FUSION_EXAMPLE_FAULTS"):
        fb.read_faults(faults)


def test_crash_fault_aborts_the_process_when_the_rule_fires(tmp_path):
    script = (
        f"import sys, torch; sys.path.insert(0, {str(EXAMPLES / 'fusion_rules')!r})\n"
        "import fusion_backend as fb\n"
        "gm = torch.fx.symbolic_trace(fb.sigmoid_mul)\n"
        "print('tracing', flush=True)\n"
        "fb.fuse(gm, {}, fb.read_faults('crash:TbeEltwiseFusionPass'))\n"
        "print('survived', flush=True)\n"
    )
    proc = subprocess.run([PYTHON, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode < 0 and "tracing" in proc.stdout and "survived" not in proc.stdout, proc.stderr[-2000:]


@needs("fusion/eager", "fusion/planted", "fusion/gelu-off")
def test_plugin_runs_honour_the_switch_file_and_record_fusion_result(example_runs):
    eager = example_runs.get("fusion/eager").output_arrays()[0]
    planted = example_runs.get("fusion/planted")
    gelu_off = example_runs.get("fusion/gelu-off")
    assert np.abs(planted.output_arrays()[0] - eager).max() > 1e-2
    np.testing.assert_allclose(gelu_off.output_arrays()[0], eager, rtol=1e-4, atol=1e-5)

    planted_result = json.loads((planted.cwd / "fusion_result.json").read_text())
    assert list(planted_result) == ["session_and_graph_id_0_0"]
    assert rule_counts(planted_result["session_and_graph_id_0_0"]) == ALL_RULES
    assert planted.status["switches"]["fired"]["fusion_result"] == planted_result
    off_result = json.loads((gelu_off.cwd / "fusion_result.json").read_text())
    assert rule_counts(off_result["session_and_graph_id_0_0"]) == {
        k: v for k, v in ALL_RULES.items() if k != "GeluFusionPass"
    }
    assert gelu_off.status["switches"]["active"]["fusion_switch_file"]["content"] == {
        "Switch": {"GraphFusion": {"GeluFusionPass": "off"}}
    }
