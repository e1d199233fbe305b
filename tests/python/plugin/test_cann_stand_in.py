"""The CANN stand-in as GE: its fusion rules switched by GE's options, a planted fault named
clearly, and the GE dump honouring dump_step, dump_layer and dump_mode (one real torchair run)."""

import json
import subprocess
from types import SimpleNamespace

import pytest

from conftest import PYTHON, example, plugin_env
from fixtures import ge_proto, real_torchair

real_torchair.use_in_this_process()

import torch  # noqa: E402

from cann_stand_in import fusion, graph_engine  # noqa: E402


def test_rules_follow_the_switch_file_oo_level_and_optimization_switch(tmp_path):
    switch = tmp_path / "switch.json"
    switch.write_text(json.dumps({"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"}}}))
    states = fusion.rule_states({"ge.fusionSwitchFile": str(switch)})
    assert states["SoftmaxFusionPass"] and not states["GeluFusionPass"] and states["TbeEltwiseFusionPass"]
    assert not any(fusion.rule_states({"ge.oo.level": "O1"}).values())
    on = fusion.rule_states({"ge.oo.level": "O1", "ge.optimizationSwitch": "GeluFusionPass:on"})
    assert [name for name, state in on.items() if state] == ["GeluFusionPass"]


def test_a_bad_switch_file_or_fault_is_named(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(fusion.FusionConfigError, match="bad.json"):
        fusion.rule_states({"ge.fusionSwitchFile": str(bad)})
    monkeypatch.setenv(fusion.FAULTS_ENV, "NoSuchPass")
    with pytest.raises(fusion.FusionConfigError, match="unknown rule.*NoSuchPass"):
        fusion.planted_faults()


def test_fusion_result_entry_is_shaped_as_ge_writes_it():
    entry = fusion.fusion_result_entry({"GeluFusionPass": 2, "TbeEltwiseFusionPass": 1})
    assert entry["graph_fusion"] == {"GeluFusionPass": {"effect_times": "2", "match_times": "2"}}
    assert entry["ub_fusion"]["TbeEltwiseFusionPass"]["repository_hit_times"] == "0"


DUMP_STEP_LAYER_MODE = """
import runpy, torch, torchair
from diagnose_pytorch import get_ge_dump_config
mlp = runpy.run_path({script!r}, run_name="mlp")["MLP"]().eval()
config = get_ge_dump_config(dump_path=".", dump_mode="output", dump_token=[1], dump_layer=["Gelu_1", "MatMulV2"])
f = torch.compile(mlp, backend=torchair.get_npu_backend(compiler_config=config))
with torch.no_grad():
    for _ in range(2):
        f(torch.randn(8, 32))
"""


def test_the_ge_dump_honours_dump_step_layer_and_mode(tmp_path):
    script = DUMP_STEP_LAYER_MODE.format(script=example("mlp"))
    done = subprocess.run(
        [PYTHON, "-c", script], cwd=tmp_path, env=plugin_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (step,) = (tmp_path / "ge_dump" / "worldsize1_global_rank0").glob("*/0/graph_1/1/*")
    assert step.name == "1"  # dump_step: the second call only
    files = sorted(p.name.split(".")[:2] for p in step.iterdir())
    assert files == [["FastGelu", "Gelu_1"], ["MatMulV2", "MatMulV2"]], files  # dump_layer; fused ops keep names
    for path in step.iterdir():
        data = path.read_bytes()
        header = ge_proto.DUMP["DumpData"]()
        header.ParseFromString(data[8 : 8 + int.from_bytes(data[:8], "little")])
        assert not header.input and len(header.output) == 1  # dump_mode output


def test_the_statistics_dump_honours_dump_step_layer_and_mode(tmp_path, monkeypatch):
    """dump_data="stats": each chosen op's statistics file in its token directory, as GE's dump
    recorder writes it (the extremes take in infinities, the mean is NaN with a NaN present)."""
    config = {
        "dump_path": str(tmp_path),
        "dump_mode": "output",
        "dump_step": "1",
        "dump_data": "stats",
        "dump_list": [{"model_name": "graph_1", "layer": ["Gelu_1"]}],
    }
    monkeypatch.setattr(graph_engine._Engine, "dump", config)
    graph = graph_engine.Graph("graph_1")
    graph.graph, graph.graph_id = SimpleNamespace(name="graph_1"), 0
    x = torch.tensor([[1.0, -2.0], [float("inf"), float("nan")]])
    ops = [fusion.Node("Gelu_1", "FastGelu", None, []), fusion.Node("Add", "Add", None, [])]
    executed = [(op, [x], [x]) for op in ops]
    for step in range(2):
        graph.steps = step
        graph._dump(executed)
    (path,) = tmp_path.glob("*/0/graph_1/1/*/*")
    assert path.parent.name == "1" and path.name.startswith("FastGelu.Gelu_1.1.0.") and path.suffix == ".csv"
    assert path.read_text().splitlines() == [
        "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,Nan Count,"
        "Negative Inf Count,Positive Inf Count",
        "Output,0,16,DT_FLOAT,ND,2x2,inf,-2,nan,4,1,0,1",
    ]
