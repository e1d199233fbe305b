"""TorchAir: msit's two config helpers against the stand-in module, and what a run with
`backend: torchair` leaves behind (FX npy dump, GE dump + graph txt, fusion_result.json)."""

import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FAKE_TORCHAIR, ok_run, uses

if str(FAKE_TORCHAIR) not in sys.path:
    sys.path.insert(0, str(FAKE_TORCHAIR))

from google.protobuf import text_format  # noqa: E402
from torchair import CompilerConfig  # noqa: E402  (the stand-in)

from diagnose_pytorch import get_fx_dump_config, get_ge_dump_config  # noqa: E402
from fixtures import ge_proto  # noqa: E402


def test_ge_dump_config_sets_msit_fields(tmp_path):
    switch = tmp_path / "switch.json"
    switch.write_text('{"Switch": {"GraphFusion": {"ALL": "off"}}}')
    config = get_ge_dump_config(
        dump_path=str(tmp_path), fusion_switch_file=str(switch), dump_token=[0, 2], dump_layer=["Add", "Mul_1"]
    )
    ge_dir = str((tmp_path / "ge_dump").resolve())
    assert Path(ge_dir).is_dir()
    assert config.dump_config.enable_dump.value is True
    assert config.dump_config.dump_path.value == ge_dir
    assert config.dump_config.dump_mode.value == "all"
    assert config.dump_config.dump_step.value == "0|2"
    assert config.dump_config.dump_layer.value == "Add Mul_1"
    assert config.fusion_config.fusion_switch_file.value == str(switch.resolve())
    assert config.debug.graph_dump.type.value == "txt"
    assert config.debug.graph_dump._path.value == ge_dir
    assert config.debug.data_dump.type.value is None


def test_ge_dump_config_checks_its_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        get_ge_dump_config(dump_path=str(tmp_path), fusion_switch_file=str(tmp_path / "none.json"))
    with pytest.raises(ValueError):
        get_ge_dump_config(dump_path=str(tmp_path), dump_mode="everything")
    with pytest.raises(TypeError):
        get_ge_dump_config(dump_path=str(tmp_path), compiler_config=object())


def test_fx_dump_config_reuses_a_given_config(tmp_path):
    given = CompilerConfig()
    given.ge_config.oo_level = "O1"
    config = get_fx_dump_config(dump_path=str(tmp_path), compiler_config=given)
    assert config is given and config.ge_config.oo_level.value == "O1"
    assert config.debug.data_dump.type.value == "npy"
    assert config.debug.data_dump.path.value == str((tmp_path / "fx_dump").resolve())
    assert config.dump_config.enable_dump.value is False


def ge_files(run) -> dict[str, Path]:
    (token_dir,) = (run.run_dir / "dump" / "ge_dump" / "worldsize1_global_rank0").glob("*/0/graph_0/1/0")
    return {p.name.split(".")[1]: p for p in token_dir.iterdir()}


def graph_links(run) -> dict[str, str]:
    """GE op name -> FX tensor name of its first output, from the graph txt."""
    (txt,) = (run.run_dir / "dump" / "ge_dump").glob("dynamo_original_graph_0_*.txt")
    graph = text_format.Parse(txt.read_text(), ge_proto.GRAPH["GraphDef"]())
    return {op.name: op.output_desc[0].attr["_fx_tensor_name"].s.decode() for op in graph.op if op.type != "Data"}


def ge_output(path: Path) -> np.ndarray:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = ge_proto.DUMP["DumpData"]()
    header.ParseFromString(data[8 : 8 + length])
    start = 8 + length + sum(i.size for i in header.input)
    out = header.output[0]
    assert out.data_type == 1, "float32 expected"
    return np.frombuffer(data[start : start + out.size], dtype=np.float32).reshape(tuple(out.shape.dim))


@uses("mlp/torchair-ge", "mlp/torchair-fx")
def test_ge_ops_link_to_fx_dump_files_and_hold_the_same_values(plugin_runs):
    ge = ok_run(plugin_runs, "mlp/torchair-ge")
    fx = ok_run(plugin_runs, "mlp/torchair-fx")
    fx_dir = fx.run_dir / "dump" / "fx_dump" / "worldsize1_global_rank0" / "graph_0" / "0"
    fx_outputs = {re.sub(r"\.\d{20}\.npy$", "", p.name): p for p in fx_dir.glob("*.OUTPUT.*")}
    links = graph_links(ge)
    assert links and set(links.values()) <= set(fx_outputs)
    files = ge_files(ge)
    assert set(files) == set(links), "one GE dump file per GE op"
    for op_name, link in links.items():
        np.testing.assert_array_equal(ge_output(files[op_name]), np.load(fx_outputs[link]))


@uses("mlp/torchair-ge", "mlp/torchair-switch")
def test_fusion_switch_file_is_applied_and_reported(plugin_runs):
    default = ok_run(plugin_runs, "mlp/torchair-ge").status["switches"]
    switched = ok_run(plugin_runs, "mlp/torchair-switch").status["switches"]
    fired = default["fired"]["fusion_result"]["session_and_graph_id_0_0"]["graph_fusion"]
    assert fired["MatMulBiasAddFusionPass"]["effect_times"] == "3"
    after = switched["fired"]["fusion_result"]["session_and_graph_id_0_0"]["graph_fusion"]
    assert "MatMulBiasAddFusionPass" not in after
    active = switched["active"]
    assert active["fusion_switch_file"]["content"]["Switch"]["GraphFusion"] == {"MatMulBiasAddFusionPass": "off"}
    assert active["torchair"] == {"experimental_config.enable_view_optimize": False}


@uses("mlp/torchair-fx", "mlp/torchair-defect")
def test_a_faulty_fusion_rule_shows_in_the_ge_dump(plugin_runs):
    faulty = ok_run(plugin_runs, "mlp/torchair-defect")
    fx = ok_run(plugin_runs, "mlp/torchair-fx")
    fx_dir = fx.run_dir / "dump" / "fx_dump" / "worldsize1_global_rank0" / "graph_0" / "0"
    (addmm,) = fx_dir.glob("addmm-aten.addmm.default.OUTPUT.0.*.npy")
    golden = np.load(addmm)
    mine = ge_output(ge_files(faulty)["Addmm"])
    np.testing.assert_allclose(mine, golden * 1.01, rtol=1e-6)
