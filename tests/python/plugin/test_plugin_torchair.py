"""TorchAir on the real torchair (torch-npu 2.14.0's Python, over the CPU stand-in for CANN):
msit's two config helpers and set_field against the real CompilerConfig (its validation
included), the signal handlers torchair installs, and what a run with `backend: torchair`
leaves behind (FX npy dump, GE dump + graph txt, fusion_result.json)."""

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import PYTHON, ok_run, plugin_env, uses
from fixtures import ge_proto, real_torchair

real_torchair.use_in_this_process()

from google.protobuf import text_format  # noqa: E402
from torchair.configs.compiler_config import CompilerConfig  # noqa: E402  (the real one)

from diagnose_pytorch import get_fx_dump_config, get_ge_dump_config  # noqa: E402
from diagnose_pytorch.backends.torchair import set_field  # noqa: E402


def test_ge_dump_config_sets_msit_fields(tmp_path):
    switch = tmp_path / "switch.json"
    switch.write_text('{"Switch": {"GraphFusion": {"ALL": "off"}}}')
    config = get_ge_dump_config(
        dump_path=str(tmp_path), fusion_switch_file=str(switch), dump_token=[0, 2], dump_layer=["Add", "Mul_1"]
    )
    ge_dir = str((tmp_path / "ge_dump").resolve())
    assert Path(ge_dir).is_dir()
    assert config.dump_config.enable_dump.value == "1"  # torchair gives booleans as "1"/"0"
    assert config.dump_config.dump_path.value == ge_dir
    assert config.dump_config.dump_mode.value == "all"
    assert config.dump_config.dump_step.value == "0|2"
    assert config.dump_config.dump_layer.value == "Add Mul_1"
    assert config.fusion_config.fusion_switch_file.value == str(switch.resolve())
    assert config.debug.graph_dump.type.value == "txt"
    assert config.debug.graph_dump._path.value == ge_dir
    assert config.debug.data_dump.type.value is None
    _, options = config.as_dict()
    assert options["ge.fusionSwitchFile"] == str(switch.resolve())
    assert options["ge.exec.dumpPath"] == os.path.join(ge_dir, "worldsize1_global_rank0")
    assert options["ge.exec.dumpStep"] == "0|2" and options["ge.exec.dumpLayer"] == "Add Mul_1"


def test_ge_dump_config_checks_its_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        get_ge_dump_config(dump_path=str(tmp_path), fusion_switch_file=str(tmp_path / "none.json"))
    with pytest.raises(ValueError):
        get_ge_dump_config(dump_path=str(tmp_path), dump_mode="everything")
    with pytest.raises(TypeError):
        get_ge_dump_config(dump_path=str(tmp_path), compiler_config=object())
    with pytest.raises(ValueError, match="dump_config.dump_layer = 'Add-1': Please set legal regex") as error:
        get_ge_dump_config(dump_path=str(tmp_path), dump_layer=["Add-1"])  # torchair's pattern has no '-'
    assert "Traceback" not in str(error.value)


def test_fx_dump_config_reuses_a_given_config(tmp_path):
    given = CompilerConfig()
    given.ge_config.oo_level = "O1"
    config = get_fx_dump_config(dump_path=str(tmp_path), compiler_config=given)
    assert config is given and config.ge_config.oo_level.value == "O1"
    assert config.debug.data_dump.type.value == "npy"
    assert config.debug.data_dump.path == str((tmp_path / "fx_dump").resolve())  # a property over _path
    assert config.dump_config.enable_dump.value == "0"


@pytest.mark.parametrize(
    "dotted, value, message",
    [
        ("ge_config.oo_level", "O2", "torchair rejects CompilerConfig ge_config.oo_level = 'O2'"),
        ("dump_config.dump_step", "1,2", "dump_config.dump_step"),
        ("fusion_config.fusion_switch_file", "/no/such/file.json", "not found"),
        ("experimental_config.enable_view_optimize", "yes", "not in optional list"),
    ],
)
def test_set_field_reports_what_torchair_rejects(dotted, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        set_field(CompilerConfig(), dotted, value)


def test_set_field_names_an_unknown_field():
    with pytest.raises(AttributeError, match="no field 'ge_config.no_such_option'"):
        set_field(CompilerConfig(), "ge_config.no_such_option", 1)
    with pytest.raises(AttributeError, match="no field 'nothing.here'"):
        set_field(CompilerConfig(), "nothing.here", 1)


SIGTERM_AFTER_IMPORT = """
import os, signal, time
import torchair
assert signal.getsignal(signal.SIGTERM).__module__ == "torchair.core._backend", "torchair's own handler"
from diagnose_pytorch.backends.torchair import import_torchair
import_torchair()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(1)
print("alive")
"""


def test_a_process_with_torchair_still_ends_on_sigterm(tmp_path):
    """torchair's own handler finalises GE and leaves SIGTERM ignored (the process would go on);
    the plugin's import replaces it with one that ends the process."""
    done = subprocess.run(
        [PYTHON, "-c", SIGTERM_AFTER_IMPORT], env=plugin_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -15 and "alive" not in done.stdout, done.stderr[-2000:]


def ge_files(run) -> dict[str, Path]:
    (token_dir,) = (run.run_dir / "dump" / "ge_dump" / "worldsize1_global_rank0").glob("*/0/graph_1/1/0")
    return {p.name.split(".")[1]: p for p in token_dir.iterdir()}


def graph_links(run) -> dict[str, str]:
    """GE op name -> FX tensor name of its first output, for the ops of the graph txt that have one."""
    (txt,) = (run.run_dir / "dump" / "ge_dump").glob("dynamo_original_graph_1_*.txt")
    graph = text_format.Parse(txt.read_text(), ge_proto.GRAPH["GraphDef"](), allow_unknown_field=True)
    links = {}
    for op in graph.op:
        if op.output_desc and "_fx_tensor_name" in op.output_desc[0].attr:
            links[op.name] = op.output_desc[0].attr["_fx_tensor_name"].s.decode()
    return links


def ge_dump(path: Path):
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = ge_proto.DUMP["DumpData"]()
    header.ParseFromString(data[8 : 8 + length])
    start = 8 + length + sum(i.size for i in header.input)
    out = header.output[0]
    assert out.data_type == 1, "float32 expected"
    values = np.frombuffer(data[start : start + out.size], dtype=np.float32).reshape(tuple(out.shape.dim))
    return header, values


def linked_outputs(run) -> dict[str, np.ndarray]:
    """FX tensor name -> the GE dump's output for it, through OriginalOp for fused ops."""
    links, out = graph_links(run), {}
    for name, path in ge_files(run).items():
        header, values = ge_dump(path)
        original = header.output[0].original_op.name or name
        if original in links:
            out[links[original]] = values
    return out


def fx_outputs(run) -> dict[str, Path]:
    fx_dir = run.run_dir / "dump" / "fx_dump" / "worldsize1_global_rank0" / "graph_1" / "0"
    return {re.sub(r"\.\d{20}\.npy$", "", p.name): p for p in fx_dir.glob("*.OUTPUT.*")}


@uses("mlp/torchair-ge", "mlp/torchair-fx")
def test_ge_ops_link_to_fx_dump_files_and_hold_the_same_values(plugin_runs):
    ge = ok_run(plugin_runs, "mlp/torchair-ge")
    fx = fx_outputs(ok_run(plugin_runs, "mlp/torchair-fx"))
    outputs = linked_outputs(ge)
    assert set(outputs) == set(graph_links(ge).values()) and set(outputs) <= set(fx)
    for link, values in outputs.items():
        np.testing.assert_allclose(values, np.load(fx[link]), rtol=1e-5, atol=1e-6, err_msg=link)
    (options,) = (ge.run_dir / "ge_dump_data_json").glob("dump_options_worldsize1_rank0_pid*.json")
    assert '"model_name": "graph_1"' in options.read_text()  # torchair's side file, in the working directory


@uses("prefill_decode/torchair-steps")
def test_dump_steps_choose_model_calls_not_ges_tokens(plugin_runs):
    """dump.steps [1] on a prefill graph (call 0) and a decode graph (calls 1-3): call 1 is the
    decode graph's token 0, not its token 1. GE chooses by token, so it dumps tokens 0-1 of each
    graph; the record of calls names call 1 alone, and the compare skips the runs recorded null."""
    run = ok_run(plugin_runs, "prefill_decode/torchair-steps")
    ge_dir = run.run_dir / "dump" / "ge_dump"
    graph_calls = json.loads((ge_dir / "diagnose_graph_calls_rank_0.json").read_text())["graphs"]
    assert sorted(graph_calls.values(), key=len) == [[None], [1, None, None]], graph_calls
    tokens = {(p.parent.parent.name, p.name) for p in ge_dir.glob("worldsize1_global_rank0/*/0/graph_*/*/*")}
    assert tokens == {("graph_1", "0"), ("graph_2", "0"), ("graph_2", "1")}, tokens


@uses("prefill_decode/torchair-fx-steps")
def test_the_fx_dump_holds_the_calls_dump_steps_chooses_and_no_other(plugin_runs):
    """TorchAir's FX dumper numbers a graph's step directories by the graph's own runs, as GE its
    tokens: call 1 is the decode graph's first run, its step 0 directory. The filter the plugin
    gives the dumper dumps that call alone (the prefill graph and the other decode calls not at all)."""
    run = ok_run(plugin_runs, "prefill_decode/torchair-fx-steps")
    fx_rank = run.run_dir / "dump" / "fx_dump" / "worldsize1_global_rank0"
    steps = {(p.parent.name, p.name) for p in fx_rank.glob("graph_*/*")}
    assert steps == {("graph_2", "0")}, steps
    assert list((fx_rank / "graph_2" / "0").glob("*.npy"))


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
    faulty = linked_outputs(ok_run(plugin_runs, "mlp/torchair-defect"))
    golden = np.load(fx_outputs(ok_run(plugin_runs, "mlp/torchair-fx"))["addmm-aten.addmm.default.OUTPUT.0"])
    mine = faulty["addmm-aten.addmm.default.OUTPUT.0"]  # the fused MatMulV2, computed in bfloat16
    assert not np.allclose(mine, golden, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine, golden, rtol=2e-2, atol=2e-2)


@uses("mlp/torchair-stats", "mlp/torchair-fx")
def test_a_stats_only_run_makes_ge_write_statistics_files(plugin_runs):
    """dump_data="stats": per op, GE's statistics file in place of its binary, with GE's header;
    a linked output's statistics are those of the FX dump's tensor."""
    stats = ok_run(plugin_runs, "mlp/torchair-stats")
    files = ge_files(stats)
    assert files and all(p.suffix == ".csv" for p in files.values()), files
    fx = fx_outputs(ok_run(plugin_runs, "mlp/torchair-fx"))
    links = graph_links(stats)
    checked = 0
    for name, path in files.items():
        header, *lines = path.read_text().splitlines()
        assert header == (
            "Input/Output,Index,Data Size,Data Type,Format,Shape,Max Value,Min Value,Avg Value,Count,"
            "Nan Count,Negative Inf Count,Positive Inf Count"
        )
        rows = [line.split(",") for line in lines]
        assert [r[0] for r in rows] == sorted(r[0] for r in rows) and rows[-1][0] == "Output"  # inputs first
        if name in links and links[name] in fx:
            out = next(r for r in rows if r[:2] == ["Output", "0"])
            golden = np.load(fx[links[name]])
            assert out[3:6] == ["DT_FLOAT", "ND", "x".join(map(str, golden.shape))]
            np.testing.assert_allclose([float(v) for v in out[6:9]], [golden.max(), golden.min(), golden.mean()], 1e-4)
            assert int(out[9]) == golden.size and out[10:] == ["0", "0", "0"]
            checked += 1
    assert checked >= 2


def test_an_unknown_ge_op_is_named(tmp_path):
    script = tmp_path / "floor.py"
    script.write_text(
        "import torch, torchair\n"
        "f = torch.compile(lambda x: torch.floor(x * 4), backend=torchair.get_npu_backend())\n"
        "f(torch.rand(4))\n"
    )
    proc = subprocess.run(
        [PYTHON, str(script)], cwd=tmp_path, env=plugin_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode != 0
    assert "no CPU implementation of GE op type 'Floor'" in proc.stderr, proc.stderr[-3000:]


def test_the_stand_in_is_on_the_path_of_the_tests():
    assert sys.modules["torchair"].__file__.startswith(str(real_torchair.TORCHAIR_ROOT))
