"""The gate's `layers:`, `referee:` and `tolerances:` options on plugin run directories written
by the fixtures (no model runs): chosen layers are gated beside the final outputs, a baseline
without an op dump is an error, the float64 truth ratio rule lets a version that moved closer to
the truth pass while one that moved away fails, and atol/rtol the user configured are honoured
as written."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from fixtures.chains import make_chain, write_chain_manifests
from fixtures.manifest_dump import ManifestDump, ManifestRecord

STATUS = {
    "format": "diagnose-run-status",
    "version": 1,
    "state": "ok",
    "torch_version": "2.13.0",
    "ran": {"mode": "compiled", "backend": "inductor", "device": "cpu", "dtype": None},
}


def plugin_run(root: Path, outputs: np.ndarray, dtype: str = "torch.float32") -> Path:
    """A plugin run directory: status.json and outputs/ (one final output)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "status.json").write_text(json.dumps(STATUS))
    dump = ManifestDump(root / "outputs")
    dump.add(ManifestRecord(0, "output", "output", 0, outputs, dtype, op="output", kind="output"))
    dump.write()
    return root


def gate(
    diagnose_bin: Path, work: Path, name: str, step: str, baseline: Path
) -> tuple[subprocess.CompletedProcess, dict]:
    """Runs a one-step gate workflow; returns the process and the JUnit cases (name -> passed)."""
    workflow = work / f"{name}.yaml"
    workflow.write_text(f"name: {name}\nmodel:\n  argv: [python3, -c, pass]\nsteps:\n{step}")
    junit = work / f"{name}.xml"
    done = subprocess.run(
        [
            str(diagnose_bin),
            "gate",
            str(workflow),
            "--baseline",
            str(baseline),
            "--model-version",
            name,
            "--output-dir",
            str(work / "runs"),
            "--junit",
            str(junit),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    cases = {}
    if junit.exists():
        cases = {c.get("name"): c.find("failure") is None for c in ET.parse(junit).iter("testcase")}
    return done, cases


def save_baseline(diagnose_bin: Path, source: Path, to: Path) -> None:
    done = subprocess.run(
        [str(diagnose_bin), "baseline", "save", str(source), "--to", str(to)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_layers_are_gated_beside_the_outputs(diagnose_bin, tmp_path):
    # tanh_0, mul_1, sin_2, neg_3 (error planted), tanh_4, mul_5: later ops inherit the error
    ops = make_chain(n_ops=6, planted=3, shape=(16, 32), seed=4)
    final = ops[-1].golden_out.astype(np.float32)
    accepted = plugin_run(tmp_path / "accepted", final)
    candidate = plugin_run(tmp_path / "candidate", final)
    write_chain_manifests(accepted / "dump", candidate / "dump", ops)
    save_baseline(diagnose_bin, accepted, tmp_path / "baseline")

    step = f"""  - id: gate
    kind: gate
    target: {candidate}
    layers: ["^mul_", "^neg_3-"]
    history: false
"""
    done, cases = gate(diagnose_bin, tmp_path, "layers", step, tmp_path / "baseline")
    assert done.returncode == 1, done.stdout + done.stderr
    # every input and output record of the chosen ops, and nothing else; the final output passes
    assert cases == {
        "output.0": True,
        "mul_1-aten.mul.default input.0": True,
        "mul_1-aten.mul.default output.0": True,
        "neg_3-aten.neg.default input.0": True,
        "neg_3-aten.neg.default output.0": False,
        "mul_5-aten.mul.default input.0": False,
        "mul_5-aten.mul.default output.0": False,
    }, cases
    assert "3 of 7 output(s) regressed" in done.stdout, done.stdout

    # the same gate against a baseline saved without an op dump is an error, not a pass
    no_dump = plugin_run(tmp_path / "no-dump", final)
    save_baseline(diagnose_bin, no_dump, tmp_path / "baseline-no-dump")
    done, _ = gate(diagnose_bin, tmp_path, "layers-no-dump", step, tmp_path / "baseline-no-dump")
    assert done.returncode not in (0, 1), done.stdout + done.stderr
    assert "the baseline has no op dump" in done.stdout + done.stderr, done.stdout + done.stderr


def test_referee_rule_passes_a_version_closer_to_float64(diagnose_bin, tmp_path):
    rng = np.random.default_rng(11)
    truth = rng.standard_normal(4096)
    noise = rng.standard_normal((3, 4096))
    accepted = plugin_run(tmp_path / "accepted", (truth + 1e-3 * noise[0]).astype(np.float32))
    closer = plugin_run(tmp_path / "closer", (truth + 1e-4 * noise[1]).astype(np.float32))
    further = plugin_run(tmp_path / "further", (truth + 1e-2 * noise[2]).astype(np.float32))
    referee = plugin_run(tmp_path / "referee", truth, dtype="torch.float64")
    save_baseline(diagnose_bin, accepted, tmp_path / "baseline")

    def step(target: Path, with_referee: bool) -> str:
        return f"  - id: gate\n    kind: gate\n    target: {target}\n    history: false\n" + (
            f"    referee: {referee}\n" if with_referee else ""
        )

    # without a referee, both differ from the baseline by more than fp32's tolerance
    for target in (closer, further):
        done, cases = gate(diagnose_bin, tmp_path, f"plain-{target.name}", step(target, False), tmp_path / "baseline")
        assert done.returncode == 1 and cases == {"output.0": False}, done.stdout + done.stderr
    # with it, the version closer to float64 than the baseline passes, by the referee rule
    done, cases = gate(diagnose_bin, tmp_path, "referee-closer", step(closer, True), tmp_path / "baseline")
    assert done.returncode == 0 and cases == {"output.0": True}, done.stdout + done.stderr
    state = json.loads(sorted((tmp_path / "runs").glob("*referee-closer*/state.json"))[-1].read_text())
    (gate_step,) = [s for s in state["steps"] if s["id"] == "gate"]
    assert [o["judged_by"] for o in gate_step["metrics"]["outputs"]] == ["fp32 truth ratio"], gate_step["metrics"][
        "outputs"
    ]
    done, cases = gate(diagnose_bin, tmp_path, "referee-further", step(further, True), tmp_path / "baseline")
    assert done.returncode == 1 and cases == {"output.0": False}, done.stdout + done.stderr


def test_configured_tolerances_are_an_allclose_nothing_overrides(diagnose_bin, tmp_path):
    """A version whose GELU became the tanh approximation differs by ~1e-4: inside the fp32
    preset's cosine and relative-L2 alternative, outside the allclose the user configured."""
    import torch

    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(5)) * 4
    exact = torch.nn.functional.gelu(x).numpy()
    tanh = torch.nn.functional.gelu(x, approximate="tanh").numpy()
    err = np.abs(tanh - exact)
    assert (err > 1e-5 + 1e-4 * np.abs(exact)).any(), "the planted change must violate the tolerances"
    assert np.sqrt(np.sum(err**2) / np.sum(exact**2)) < 1e-4, "and stay inside the preset's relative L2"
    accepted = plugin_run(tmp_path / "accepted", exact)
    unchanged = plugin_run(tmp_path / "unchanged", exact.copy())
    tanh_gelu = plugin_run(tmp_path / "tanh-gelu", tanh)
    save_baseline(diagnose_bin, accepted, tmp_path / "baseline")

    def step(target: Path, tolerances: str) -> str:
        return f"  - id: gate\n    kind: gate\n    target: {target}\n    history: false\n{tolerances}"

    configured = "    tolerances: {fp32: {rtol: 1.0e-4, atol: 1.0e-5}}\n"
    done, cases = gate(diagnose_bin, tmp_path, "tanh-configured", step(tanh_gelu, configured), tmp_path / "baseline")
    assert done.returncode == 1 and cases == {"output.0": False}, done.stdout + done.stderr
    state = json.loads(sorted((tmp_path / "runs").glob("*tanh-configured*/state.json"))[-1].read_text())
    (gate_step,) = [s for s in state["steps"] if s["id"] == "gate"]
    assert [o["judged_by"] for o in gate_step["metrics"]["outputs"]] == [
        "fp32 allclose as set (atol 1e-05, rtol 0.0001)"
    ], gate_step["metrics"]["outputs"]
    done, cases = gate(diagnose_bin, tmp_path, "unchanged", step(unchanged, configured), tmp_path / "baseline")
    assert done.returncode == 0 and cases == {"output.0": True}, done.stdout + done.stderr
