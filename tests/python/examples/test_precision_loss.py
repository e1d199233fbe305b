"""examples/precision_loss: the backend's rules, switch file, fusion_result.json and plants. The
rewrites are checked on the real Dynamo graph of the example model, run eagerly (no Inductor
compile), against eager float32 and a float64 run of the same model; one Inductor compile of a
one-node graph checks that the float16 softmax kernel survives Inductor."""

import copy
import json

import pytest
import torch

from example_runs import block_graph, example_model, rule_counts, run_rewritten

precision_model = example_model("precision_loss")
import mock_ge  # noqa: E402
import precision_backend as pb  # noqa: E402

ALL_RULES = {
    "MatMulBiasAddFusionPass": "6",
    "LayerNormFusionPass": "2",
    "SoftmaxFusionPass": "1",
    "GeluFusionPass": "1",
    "TbeEltwiseAddFusionPass": "2",
}
PLANTED_OFF = {"GraphFusion": {"SoftmaxFusionPass": "off", "GeluFusionPass": "off"}}


@pytest.fixture(scope="module")
def model_graph():
    """The example's Dynamo graph, its inputs, the eager output and a float64 run's output."""
    gm, inputs, eager, block, x = block_graph(precision_model, 64, 64)
    with torch.no_grad():
        return gm, inputs, eager, copy.deepcopy(block).double()(x.double())


def rmse(a, b):
    return float(((a.double() - b.double()) ** 2).mean().sqrt())


def fused(model_graph, switches=None, plant="none"):
    """(fusion result, the rewritten graph's output, its rewritten graph)."""
    gm, inputs, _, _ = model_graph
    return run_rewritten(gm, inputs, lambda g: pb.fuse(g, switches or {}, plant))


def targets(gm):
    return {n.target for n in gm.graph.nodes if n.op == "call_function"}


def within_fp32_rounding(out, model_graph):
    _, _, reference, float64 = model_graph
    return float((out - reference).abs().max()) < 1e-5 and rmse(out, float64) < 1.5 * rmse(reference, float64)


def quiet_loss(out, model_graph):
    """Fails allclose at fp32 tolerances, is inside the cosine/relative-L2 alternative of the fp32
    preset, and is more than 100x further from float64 than eager."""
    _, _, reference, float64 = model_graph
    relative_l2 = float((out - reference).norm() / reference.norm())
    failing = int((~torch.isclose(out, reference, rtol=1.3e-6, atol=1e-5)).sum())
    return 1e-6 < relative_l2 < 1e-4 and failing > 1000 and rmse(out, float64) > 100 * rmse(reference, float64)


def test_every_rule_fires_and_the_clean_rewrites_keep_fp32_numbers(model_graph):
    result, out, gm = fused(model_graph)
    assert rule_counts(result) == ALL_RULES
    assert set(result["ub_fusion"]) == {"TbeEltwiseAddFusionPass"}
    assert all(c["match_times"] == c["effect_times"] for g in result.values() for c in g.values())
    assert within_fp32_rounding(out, model_graph)
    assert {
        mock_ge.fused_softmax,
        mock_ge.fused_gelu,
        mock_ge.fused_layer_norm,
        mock_ge.fused_matmul_bias_add,
    } <= targets(gm)
    assert torch.erf not in targets(gm) and torch.exp not in targets(gm)


@pytest.mark.parametrize("plant,rule", [("softmax_fp16", "SoftmaxFusionPass"), ("tanh_gelu", "GeluFusionPass")])
def test_the_planted_rule_loses_precision_quietly_and_switching_it_off_restores_it(model_graph, plant, rule):
    result, out, _ = fused(model_graph, plant=plant)
    assert rule_counts(result) == ALL_RULES and quiet_loss(out, model_graph)
    result, out, _ = fused(model_graph, {"GraphFusion": {rule: "off"}}, plant)
    assert rule not in rule_counts(result) and within_fp32_rounding(out, model_graph)


def test_the_default_plant_is_the_float16_softmax(model_graph, monkeypatch):
    monkeypatch.delenv(pb.PLANT_ENV, raising=False)
    assert pb.planted_rule(None) == "SoftmaxFusionPass"
    _, _, gm = fused(model_graph, plant=None)
    assert pb.softmax_fp16_kernel in targets(gm) and mock_ge.fused_softmax not in targets(gm)


@pytest.mark.parametrize("plant", sorted(pb.PLANTS))
def test_with_the_planted_rules_off_every_plant_matches_eager(model_graph, plant):
    result, out, _ = fused(model_graph, PLANTED_OFF, plant)
    assert rule_counts(result) == {k: v for k, v in ALL_RULES.items() if k not in PLANTED_OFF["GraphFusion"]}
    assert within_fp32_rounding(out, model_graph)


def test_switch_file_rule_entry_beats_all_and_unnamed_rules_stay_on(model_graph, tmp_path):
    path = tmp_path / "switch.cfg"
    path.write_text(json.dumps({"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"}, "UBFusion": {}}}))
    result, out, _ = fused(model_graph, mock_ge.read_switches(str(path)))
    # the UB rule also takes the adds the GraphFusion rules left: 6 bias adds, 2 LayerNorm shifts
    assert rule_counts(result) == {"SoftmaxFusionPass": "1", "TbeEltwiseAddFusionPass": "10"}
    assert within_fp32_rounding(out, model_graph)


def test_unknown_plant_is_an_error():
    with pytest.raises(mock_ge.FusionConfigError, match="EXAMPLE_PLANT"):
        pb.planted_rule("fast_softmax")


def test_backend_reads_the_environment_and_writes_fusion_result_for_every_graph(tmp_path, monkeypatch):
    """The backend as torch.compile calls it, Inductor replaced by running the rewritten graph."""
    import torch._inductor.compile_fx as compile_fx_module

    switch = tmp_path / "switch.json"
    switch.write_text(json.dumps({"Switch": {"GraphFusion": {"MatMulBiasAddFusionPass": "off"}}}))
    monkeypatch.setenv(mock_ge.SWITCH_FILE_ENV, str(switch))
    monkeypatch.setenv(pb.PLANT_ENV, "tanh_gelu")
    monkeypatch.setattr(compile_fx_module, "compile_fx", lambda gm, example_inputs: gm.forward)
    monkeypatch.setattr(pb, "fusion_report", mock_ge.FusionReport())
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        gm = torch.fx.symbolic_trace(lambda x, w, b: mock_ge.erf_gelu(mock_ge.matmul_bias_add(x, w, b)))
        run = pb.backend(gm, [])
        assert pb.tanh_gelu in targets(gm)
    x, w, b = torch.randn(4, 8), torch.randn(8, 8), torch.randn(8)
    torch.testing.assert_close(run(x, w, b), torch.nn.functional.gelu(x @ w + b, approximate="tanh"))
    result = json.loads((tmp_path / mock_ge.RESULT_FILE).read_text())
    assert list(result) == ["session_and_graph_id_0_0", "session_and_graph_id_0_1"]
    # MatMulBiasAddFusionPass is off: its bias add is left to the UB rule
    assert rule_counts(result["session_and_graph_id_0_1"]) == {"GeluFusionPass": "1", "TbeEltwiseAddFusionPass": "1"}


def test_the_float16_softmax_kernel_survives_inductor(inductor_cache, monkeypatch):
    """Inductor drops fp32->fp16->fp32 cast pairs, so the planted softmax is an opaque kernel:
    compiled, it still rounds to float16 (a one-node graph: no kernel to generate)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor_cache))
    from torch._inductor.compile_fx import compile_fx

    x = 4 * torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    gm = torch.fx.symbolic_trace(lambda x: (pb.softmax_fp16_kernel(x),))
    (compiled,) = compile_fx(gm, [x])(x)
    assert compiled.dtype == torch.float32
    assert torch.equal(compiled, torch.softmax(x.half(), -1).float())
    assert not torch.equal(compiled, torch.softmax(x, -1))
