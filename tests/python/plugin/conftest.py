"""Plugin tests: real PyTorch, real torch.compile, the plugin run in real subprocesses.

Runs are expensive (an Inductor compile takes tens of seconds on two cores), so every run is
named in CATALOG, each test names the runs it needs with `@pytest.mark.uses_runs(...)`, and one
session-wide pool of two workers runs those of the selected tests once, slowest first, while
tests wait for theirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fixtures import real_torchair
from fixtures.plugin_runs import Run, RunPool

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PYTHON = sys.executable
EXAMPLES = ("mlp", "transformer_block", "convnet")
RUN_TIMEOUT = 600


def example(name: str) -> str:
    return str(REPO / "examples" / name / "model.py")


@dataclass
class RunConfig:
    script: str
    spec: dict
    args: list[str] = field(default_factory=list)
    env: dict = field(default_factory=dict)
    runner: bool = True  # False: plain `python script` (the script uses the explicit API)
    cost: int = 1  # rough relative duration, to start slow runs first


def _catalog() -> dict[str, RunConfig]:
    runs = {}
    for ex in EXAMPLES:
        script = example(ex)
        runs[f"{ex}/eager"] = RunConfig(script, {"mode": "eager"})
        runs[f"{ex}/eager-backend"] = RunConfig(script, {"backend": "eager"}, cost=2)
        for backend in ("aot_eager", "aot_eager_decomp_partition"):
            runs[f"{ex}/{backend}"] = RunConfig(script, {"backend": backend}, cost=2)
        runs[f"{ex}/inductor"] = RunConfig(script, {"backend": "inductor"}, cost=6)
        runs[f"{ex}/torchair-ge"] = RunConfig(script, {"backend": "torchair"}, cost=2)
        runs[f"{ex}/torchair-fx"] = RunConfig(script, {"backend": "torchair", "dump": {"level": "fx"}}, cost=2)
    mlp, block = example("mlp"), example("transformer_block")
    runs.update(
        {
            "mlp/eager-again": RunConfig(mlp, {"mode": "eager"}),
            "mlp/inductor-nodump": RunConfig(mlp, {"backend": "inductor", "dump": {"level": "none"}}, cost=4),
            "transformer_block/inductor-nodump": RunConfig(
                block, {"backend": "inductor", "dump": {"level": "none"}}, cost=5
            ),
            "transformer_block/eager-bf16": RunConfig(block, {"mode": "eager", "dtype": "bfloat16"}),
            "transformer_block/decomp-bf16": RunConfig(
                block, {"backend": "aot_eager_decomp_partition", "dtype": "bfloat16"}, cost=2
            ),
            "transformer_block/inductor-bf16": RunConfig(block, {"backend": "inductor", "dtype": "bfloat16"}, cost=6),
            "mlp/autocast": RunConfig(
                mlp, {"mode": "eager", "autocast": "bfloat16", "deterministic": True, "dump": {"io": ["output"]}}
            ),
            "mlp/stats": RunConfig(mlp, {"mode": "eager", "dump": {"stats_only": True}}),
            "mlp/budget": RunConfig(mlp, {"mode": "eager", "dump": {"max_bytes": 20000}}),
            "mlp/steps": RunConfig(
                mlp, {"backend": "aot_eager", "dump": {"steps": [1], "io": ["output"]}}, args=["--steps", "3"], cost=2
            ),
            "mlp/filtered": RunConfig(
                mlp, {"mode": "eager", "dump": {"include": ["addmm"], "exclude": ["layers\\.4"], "io": ["output"]}}
            ),
            "mlp/modules": RunConfig(mlp, {"mode": "eager", "dump": {"ops": False, "modules": True}}),
            "mlp/user-backend": RunConfig(
                mlp,
                {"backend": "user_backend:recording_backend"},
                env={"USER_BACKEND_RECORD": "{run_dir}/user_backend.jsonl"},
                cost=2,
            ),
            "mlp/torchair-switch": RunConfig(
                mlp,
                {
                    "backend": "torchair",
                    "switches": {
                        "fusion_switch_file": str(HERE / "data" / "matmul_bias_off.json"),
                        "torchair": {"experimental_config.enable_view_optimize": False},
                    },
                },
                cost=2,
            ),
            "mlp/torchair-stats": RunConfig(mlp, {"backend": "torchair", "dump": {"stats_only": True}}, cost=2),
            "mlp/torchair-defect": RunConfig(
                mlp, {"backend": "torchair"}, cost=2, env={"CANN_STAND_IN_FAULTS": "MatMulBiasAddFusionPass"}
            ),
            "prefill_decode/torchair-steps": RunConfig(
                str(HERE / "scripts" / "prefill_decode.py"), {"backend": "torchair", "dump": {"steps": [1]}}, cost=2
            ),
            "prefill_decode/torchair-fx-steps": RunConfig(
                str(HERE / "scripts" / "prefill_decode.py"),
                {"backend": "torchair", "dump": {"level": "fx", "steps": [1]}},
                cost=2,
            ),
            "graph_break/aot_eager": RunConfig(
                str(HERE / "scripts" / "graph_break.py"), {"backend": "aot_eager"}, cost=2
            ),
            "explicit-backend/user-backend": RunConfig(
                str(HERE / "scripts" / "explicit_backend.py"),
                {"backend": "user_backend:recording_backend"},
                env={"USER_BACKEND_RECORD": "{run_dir}/user_backend.jsonl"},
            ),
            "failing/aot_eager": RunConfig(str(HERE / "scripts" / "failing.py"), {"backend": "aot_eager"}),
            "explicit/eager": RunConfig(
                str(HERE / "scripts" / "explicit_api.py"), {"mode": "eager", "dump": {"io": ["output"]}}, runner=False
            ),
        }
    )
    return runs


CATALOG = _catalog()


def plugin_env(cache_dir: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([*real_torchair.pythonpath(), str(HERE), env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def launch(name: str, config: RunConfig, root: Path, cache_dir: Path, **popen) -> tuple:
    """Writes the spec and starts the run; returns (Popen, run_dir)."""
    run_dir = root / name.replace("/", "__")
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = {"output_dir": str(run_dir), "mode": "compiled", **config.spec}
    spec_path = run_dir.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec))
    extra = {k: v.format(run_dir=run_dir) for k, v in config.env.items()}
    env = plugin_env(cache_dir, {"DIAGNOSE_RUN_SPEC": str(spec_path), **extra})
    command = (
        [PYTHON, "-m", "diagnose_pytorch", "run", config.script, *config.args]
        if config.runner
        else [PYTHON, config.script, *config.args]
    )
    proc = subprocess.Popen(command, cwd=run_dir, env=env, text=True, **popen)
    return proc, run_dir


class PluginRuns(RunPool):
    def __init__(self, root: Path, cache_dir: Path):
        super().__init__(CATALOG, root, cache_dir)

    def _run(self, name: str) -> Run:
        proc, run_dir = launch(
            name, CATALOG[name], self.root, self.cache_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        return Run(name, run_dir, run_dir, proc.returncode, stdout, stderr)


_needed: list[str] = []


def pytest_configure(config):
    config.addinivalue_line("markers", "uses_runs(*names): plugin runs (CATALOG) the test reads")


def pytest_collection_finish(session):
    for item in session.items:
        for marker in item.iter_markers("uses_runs"):
            _needed.extend(marker.args)


def uses(*names):
    """Marks a test as reading these runs; unknown names fail at collection."""
    unknown = [n for n in names if n not in CATALOG]
    assert not unknown, f"not in CATALOG: {unknown}"
    return pytest.mark.uses_runs(*names)


@pytest.fixture(scope="session")
def cache_dir(inductor_cache) -> Path:
    return inductor_cache


@pytest.fixture(scope="session")
def plugin_runs(tmp_path_factory, cache_dir) -> PluginRuns:
    runs = PluginRuns(tmp_path_factory.mktemp("runs"), cache_dir)
    runs.start(_needed)
    yield runs
    runs.shutdown()


def ok_run(plugin_runs: PluginRuns, name: str) -> Run:
    run = plugin_runs.get(name)
    assert run.returncode == 0, run.describe()
    return run


def single_op_check(eager: Run, ops: list[str], out: Path, cache_dir: Path, *extra: str) -> None:
    """`python -m diagnose_pytorch single-op` on `ops` of an eager run, with Inductor and the
    `extra` arguments, into `out`."""
    command = ["single-op", "--from", str(eager.run_dir), "--out", str(out), "--backend", "inductor"]
    proc = subprocess.run(
        [PYTHON, "-m", "diagnose_pytorch", *command, "--ops", ",".join(ops), *extra],
        cwd=out.parent,
        env=plugin_env(cache_dir),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
