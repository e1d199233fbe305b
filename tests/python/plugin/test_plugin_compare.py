"""The plugin's dumps read by the real `diagnose compare` (docs/compare-output.md)."""

import pytest

from conftest import ok_run, uses
from fixtures.compare_cli import CompareRun, run_compare


def compare(binary, golden, mine, out) -> CompareRun:
    """Runs `diagnose compare` on two dumps; it must judge them (exit 0 or 1) and write its result."""
    run = run_compare(binary, golden, mine, out, timeout=120)
    assert run.rc in (0, 1) and run.result is not None, run.describe()
    return run


@uses("mlp/eager", "mlp/eager-again")
def test_eager_dump_against_a_second_eager_run_passes_exactly(plugin_runs, diagnose_bin, tmp_path):
    first, second = ok_run(plugin_runs, "mlp/eager"), ok_run(plugin_runs, "mlp/eager-again")
    run = compare(diagnose_bin, first.run_dir / "dump", second.run_dir / "dump", tmp_path)
    assert run.rc == 0, run.describe()
    assert run.result["golden"]["kind"] == run.result["mine"]["kind"] == "diagnose_dump"
    compared = run.rows()
    assert len(compared) == len(first.dump.tensors) and run.result["summary"]["failed"] == 0
    assert all(r["verdict"] == "pass" and r["max_absolute_error"] == 0 for r in compared)


@pytest.mark.parametrize(
    "ex",
    [pytest.param(ex, marks=uses(f"{ex}/eager", f"{ex}/inductor")) for ex in ("mlp", "transformer_block", "convnet")],
)
def test_eager_vs_inductor_fp32_final_outputs_pass(plugin_runs, diagnose_bin, tmp_path, ex):
    eager, inductor = ok_run(plugin_runs, f"{ex}/eager"), ok_run(plugin_runs, f"{ex}/inductor")
    run = compare(diagnose_bin, eager.run_dir / "outputs", inductor.run_dir / "outputs", tmp_path)
    # the model's output, and the state the call leaves: its buffers (convnet's BatchNorm statistics)
    outputs = [r for r in run.rows() if r["op_key"] == "output"]
    state = [r for r in run.rows() if r["op_key"].startswith("state.buffers.")]
    assert len(outputs) == 1 and len(state) == (6 if ex == "convnet" else 0), run.describe()
    assert run.rc == 0 and run.result["summary"]["compared"] == len(outputs) + len(state), run.describe()


@uses("mlp/aot_eager_decomp_partition", "mlp/inductor")
def test_fx_level_vs_inductor_buffers_pass_at_fp32(plugin_runs, diagnose_bin, tmp_path):
    fx = ok_run(plugin_runs, "mlp/aot_eager_decomp_partition")
    inductor = ok_run(plugin_runs, "mlp/inductor")
    run = compare(diagnose_bin, fx.run_dir / "dump", inductor.run_dir / "dump", tmp_path)
    assert run.rc == 0, run.describe()
    compared = [r for r in run.rows() if r["verdict"] == "pass"]
    buffers = {r["op_key"] for r in inductor.dump.ops()}
    assert len({r["op_key"] for r in compared} & buffers) >= 3


@uses("transformer_block/decomp-bf16", "transformer_block/inductor-bf16")
def test_bf16_inductor_rows_show_differences_on_fx_node_keys(plugin_runs, diagnose_bin, tmp_path):
    fx = ok_run(plugin_runs, "transformer_block/decomp-bf16")
    inductor = ok_run(plugin_runs, "transformer_block/inductor-bf16")
    run = compare(diagnose_bin, fx.run_dir / "dump", inductor.run_dir / "dump", tmp_path)
    compared = [r for r in run.rows() if r["max_absolute_error"] is not None]
    assert compared, run.describe()
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
    clean = compare(diagnose_bin, fx, ge, tmp_path / "clean")
    assert clean.rc == 0 and clean.result["summary"]["compared"] >= 4, clean.describe()
    assert (clean.result["golden"]["kind"], clean.result["mine"]["kind"]) == ("fx_npy_dump", "ge_dump")
    defect = compare(diagnose_bin, fx, faulty, tmp_path / "faulty")
    assert defect.rc == 1, defect.describe()
    (divergence,) = defect.result["summary"]["divergences"]
    assert divergence["first_failing_op"] == "addmm-aten.addmm.default"


@uses("mlp/torchair-fx", "mlp/torchair-stats")
def test_a_stats_only_torchair_run_is_judged_on_statistics(plugin_runs, diagnose_bin, tmp_path):
    fx = ok_run(plugin_runs, "mlp/torchair-fx").run_dir / "dump" / "fx_dump"
    stats = ok_run(plugin_runs, "mlp/torchair-stats").run_dir / "dump" / "ge_dump"
    run = compare(diagnose_bin, fx, stats, tmp_path)
    assert run.rc == 0, run.describe()
    judged = [r for r in run.rows() if r["verdict"] == "pass"]
    assert len(judged) >= 4 and run.result["summary"]["failed"] == 0, run.describe()
    assert all(r["judged_by"] == "fp32 statistics" for r in judged), run.describe()
