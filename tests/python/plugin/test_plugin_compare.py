"""The plugin's dumps read by the real `diagnose compare` (docs/compare-output.md)."""

import json
import subprocess
from pathlib import Path

import pytest

from conftest import ok_run, uses


def compare(binary: Path, golden: Path, mine: Path, out: Path, *extra) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [
            str(binary),
            "compare",
            "-gp",
            str(golden),
            "-mp",
            str(mine),
            "-o",
            str(out),
            "--json",
            str(out / "result.json"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.returncode, json.loads((out / "result.json").read_text()), proc.stdout + proc.stderr


def rows(result: dict) -> list[dict]:
    return [row for group in result["groups"] for row in group["rows"]]


@uses("mlp/eager", "mlp/eager-again")
def test_eager_dump_against_a_second_eager_run_passes_exactly(plugin_runs, diagnose_bin, tmp_path):
    first, second = ok_run(plugin_runs, "mlp/eager"), ok_run(plugin_runs, "mlp/eager-again")
    rc, result, log = compare(diagnose_bin, first.run_dir / "dump", second.run_dir / "dump", tmp_path)
    assert rc == 0, log
    assert result["golden"]["kind"] == result["mine"]["kind"] == "diagnose_dump"
    compared = rows(result)
    assert len(compared) == len(first.dump.tensors) and result["summary"]["failed"] == 0
    assert all(r["verdict"] == "pass" and r["max_absolute_error"] == 0 for r in compared)


@pytest.mark.parametrize(
    "ex",
    [pytest.param(ex, marks=uses(f"{ex}/eager", f"{ex}/inductor")) for ex in ("mlp", "transformer_block", "convnet")],
)
def test_eager_vs_inductor_fp32_final_outputs_pass(plugin_runs, diagnose_bin, tmp_path, ex):
    eager, inductor = ok_run(plugin_runs, f"{ex}/eager"), ok_run(plugin_runs, f"{ex}/inductor")
    rc, result, log = compare(diagnose_bin, eager.run_dir / "outputs", inductor.run_dir / "outputs", tmp_path)
    assert rc == 0 and result["summary"]["compared"] == 1, log


@uses("mlp/aot_eager_decomp_partition", "mlp/inductor")
def test_fx_level_vs_inductor_buffers_pass_at_fp32(plugin_runs, diagnose_bin, tmp_path):
    fx = ok_run(plugin_runs, "mlp/aot_eager_decomp_partition")
    inductor = ok_run(plugin_runs, "mlp/inductor")
    rc, result, log = compare(diagnose_bin, fx.run_dir / "dump", inductor.run_dir / "dump", tmp_path)
    assert rc == 0, log
    compared = [r for r in rows(result) if r["verdict"] == "pass"]
    buffers = {r["op_key"] for r in inductor.dump.ops()}
    assert len({r["op_key"] for r in compared} & buffers) >= 3


@uses("transformer_block/decomp-bf16", "transformer_block/inductor-bf16")
def test_bf16_inductor_rows_show_differences_on_fx_node_keys(plugin_runs, diagnose_bin, tmp_path):
    fx = ok_run(plugin_runs, "transformer_block/decomp-bf16")
    inductor = ok_run(plugin_runs, "transformer_block/inductor-bf16")
    _, result, log = compare(diagnose_bin, fx.run_dir / "dump", inductor.run_dir / "dump", tmp_path)
    compared = [r for r in rows(result) if r["max_absolute_error"] is not None]
    assert compared, log
    bf16 = [r for r in compared if r["my_dtype"] == "torch.bfloat16"]
    assert any(r["max_absolute_error"] > 0 for r in bf16), "no real bf16 difference seen"
    assert all(r["verdict"] == "pass" for r in bf16), "bf16 rows beyond bf16 tolerance"
    fx_keys = {r["op_key"] for r in fx.dump.tensors}
    assert all(r["op_key"] in fx_keys for r in compared)


@uses("mlp/torchair-fx", "mlp/torchair-ge", "mlp/torchair-defect")
def test_torchair_dumps_are_read_directly(plugin_runs, diagnose_bin, tmp_path):
    fx = ok_run(plugin_runs, "mlp/torchair-fx").run_dir / "dump" / "fx_dump"
    ge = ok_run(plugin_runs, "mlp/torchair-ge").run_dir / "dump" / "ge_dump"
    faulty = ok_run(plugin_runs, "mlp/torchair-defect").run_dir / "dump" / "ge_dump"
    rc, result, log = compare(diagnose_bin, fx, ge, tmp_path / "clean")
    assert rc == 0 and result["summary"]["compared"] >= 4, log
    assert (result["golden"]["kind"], result["mine"]["kind"]) == ("fx_npy_dump", "ge_dump")
    rc, result, log = compare(diagnose_bin, fx, faulty, tmp_path / "faulty")
    assert rc == 1, log
    (divergence,) = result["summary"]["divergences"]
    assert divergence["first_failing_op"] == "addmm-aten.addmm.default"
