"""examples/graph_only_defect: the vendor backend's kernels on the example's real Dynamo graph,
run in process (the backend is an FX interpreter: no compiler): the fused multiply-add is
wrong, every op alone and both fusion rules are right, the switch file and fusion_result.json
follow GE's formats. The standard workflow's diagnosis of it is asserted in
tests/python/workflows/test_standard_workflow.py."""

import json

import pytest
import torch

from example_runs import block_graph, example_model

graph_only_model = example_model("graph_only_defect")
import mock_ge  # noqa: E402
import vendor_backend as vb  # noqa: E402


@pytest.fixture(scope="module")
def model_graph():
    """The example's Dynamo graph, its inputs and the eager output."""
    return block_graph(graph_only_model, 8, 16)[:3]


def run_vendor(gm, inputs, monkeypatch, tmp_path, switch=None):
    monkeypatch.chdir(tmp_path)
    if switch is not None:
        (tmp_path / "switch.json").write_text(json.dumps({"Switch": switch}))
        monkeypatch.setenv(mock_ge.SWITCH_FILE_ENV, str(tmp_path / "switch.json"))
    else:
        monkeypatch.delenv(mock_ge.SWITCH_FILE_ENV, raising=False)
    vb.fusion_report.graphs.clear()
    with torch.no_grad():
        (out,) = vb.backend(gm, inputs)(*inputs)
    return out, json.loads((tmp_path / mock_ge.RESULT_FILE).read_text())


@pytest.mark.parametrize("switch", [None, {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}])
def test_the_fused_multiply_add_is_wrong_with_or_without_the_rules(model_graph, monkeypatch, tmp_path, switch):
    gm, inputs, eager = model_graph
    out, _ = run_vendor(gm, inputs, monkeypatch, tmp_path, switch)
    assert (out - eager).abs().max() > 1e-4  # eager is 1.6e-7 from float64


def test_the_rules_fire_in_ges_format_and_are_innocent(model_graph, monkeypatch, tmp_path):
    gm, inputs, eager = model_graph
    _, result = run_vendor(gm, inputs, monkeypatch, tmp_path)
    counts = {"match_times": "1", "effect_times": "1"}
    assert result == {
        "session_and_graph_id_0_0": {
            "graph_fusion": {"MatMulReluFusionPass": counts},
            "ub_fusion": {"TbeTanhMatMulFusionPass": counts},
        }
    }
    _, result = run_vendor(gm, inputs, monkeypatch, tmp_path, {"GraphFusion": {"MatMulReluFusionPass": "off"}})
    assert result["session_and_graph_id_0_0"]["graph_fusion"] == {}
    x = torch.randn(4, 8)
    w, b = torch.randn(5, 8), torch.randn(5)
    torch.testing.assert_close(vb.linear_relu((x, w, b), ()), torch.relu(torch.nn.functional.linear(x, w, b)))
    torch.testing.assert_close(vb.tanh_linear((x,), (w, b)), torch.nn.functional.linear(torch.tanh(x), w, b))


def test_every_op_alone_is_right_and_a_shared_product_is_not_fused(monkeypatch, tmp_path):
    def mul_alone(a, b):
        return a * b

    def product_used_twice(a, b, c):
        p = a * b
        return p + c, p

    a, b, c = torch.randn(3, 64), torch.randn(3, 64), torch.randn(3, 64)
    for function, inputs in ((mul_alone, (a, b)), (product_used_twice, (a, b, c))):
        gm = torch.fx.symbolic_trace(function)
        monkeypatch.chdir(tmp_path)
        vb.fusion_report.graphs.clear()
        torch.testing.assert_close(vb.backend(gm, list(inputs))(*inputs), function(*inputs), rtol=0, atol=0)
