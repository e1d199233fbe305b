"""Plugin runs of the examples with planted causes, shared by the example tests: every run is
named in CATALOG, a test names the runs it reads with @needs(...), and the session fixture
`example_runs` starts the runs of all selected tests at once on two workers (slowest first).
Real subprocesses, real torch.compile; one Inductor cache per session.

(A helper module, not a conftest.py: tests/python already has two conftest modules.)"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from fixtures.plugin_runs import Run, RunPool

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
EXAMPLES = REPO / "examples"
PYTHON = sys.executable
TIMEOUT = 600


@dataclass
class RunConfig:
    example: str
    spec: dict
    env: dict = field(default_factory=dict)
    cost: int = 1


CATALOG = {
    "lowering/eager": RunConfig("lowering_defect", {"mode": "eager"}),
    "meta/eager-meta": RunConfig("meta_defect", {"mode": "eager", "checks": {"meta": True}}),
    "device/cpu": RunConfig("device_kernel_defect", {"mode": "eager"}),
    "device/fast": RunConfig("device_kernel_defect", {"mode": "eager"}, env={"EXAMPLE_KERNEL": "fast"}),
    "custom_op/eager-meta": RunConfig("custom_op_mutation", {"mode": "eager", "checks": {"meta": True}}),
    "custom_op/inductor": RunConfig("custom_op_mutation", {"backend": "inductor", "dump": {"level": "none"}}, cost=3),
    "graph_pass/eager": RunConfig("graph_pass_defect", {"mode": "eager"}),
    "graph_pass/compiled": RunConfig(
        "graph_pass_defect", {"backend": "graph_pass_backend:backend", "dump": {"level": "compiled"}}, cost=4
    ),
    "fusion/eager": RunConfig("fusion_rules", {"mode": "eager", "dump": {"level": "none"}}),
    "fusion/planted": RunConfig("fusion_rules", {"backend": "fusion_backend:backend"}, cost=4),
    "fusion/gelu-off": RunConfig(
        "fusion_rules",
        {"backend": "fusion_backend:backend", "switches": {"fusion_switch_file": str(HERE / "data" / "gelu_off.json")}},
        cost=4,
    ),
    "bf16/eager-bf16": RunConfig(
        "bf16_more_accurate", {"mode": "eager", "dtype": "bfloat16", "dump": {"level": "none"}}
    ),
    "bf16/eager-fp64": RunConfig(
        "bf16_more_accurate", {"mode": "eager", "dtype": "float64", "dump": {"level": "none"}}
    ),
    "bf16/inductor-bf16": RunConfig(
        "bf16_more_accurate", {"backend": "inductor", "dtype": "bfloat16", "dump": {"level": "none"}}, cost=3
    ),
}


def example_model(example: str):
    """examples/<example>/model.py as a module of its own name: every example has a model.py, and
    one test process imports several. Its directory goes on sys.path, as in a run, so that its
    own imports (the example's backend) resolve."""
    directory = EXAMPLES / example
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    spec = importlib.util.spec_from_file_location(f"{example}_model", directory / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dynamo_graph(fn, *inputs) -> tuple[torch.fx.GraphModule, list]:
    """The one Dynamo graph of `fn` called on `inputs`, with the example inputs Dynamo passed
    its backend (the graph is captured, not compiled)."""
    captured = []

    def capture(gm, example_inputs):
        captured.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=capture, fullgraph=True)(*inputs)
    torch._dynamo.reset()
    ((gm, example_inputs),) = captured
    return gm, example_inputs


def block_graph(model, *shape) -> tuple[torch.fx.GraphModule, list, torch.Tensor, torch.nn.Module, torch.Tensor]:
    """The example's Block as its model.py builds it (torch.manual_seed(0), eval mode), called
    without grad on an input of `shape` seeded 100 as example_loop's first step: (the block's
    Dynamo graph, the graph's inputs, the block's eager output, the block, the input)."""
    torch.manual_seed(0)
    block = model.Block().eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(100))
    with torch.no_grad():
        return *dynamo_graph(block, x), block(x), block, x


def run_rewritten(gm: torch.fx.GraphModule, inputs: list, rewrite) -> tuple:
    """Rewrites a copy of `gm` with `rewrite` (an example backend's fuse, in place) and runs the
    copy on `inputs` without grad: (what rewrite returned, the first output, the copy)."""
    gm = copy.deepcopy(gm)
    result = rewrite(gm)
    with torch.no_grad():
        out = gm(*inputs)
    return result, out[0] if isinstance(out, (list, tuple)) else out, gm


def rule_counts(graph_result: dict) -> dict:
    """{rule: effect_times} of one graph's entry in fusion_result.json (mock_ge.graph_result)."""
    return {rule: counts["effect_times"] for group in graph_result.values() for rule, counts in group.items()}


def needs(*names):
    """Marks a test as reading these runs (plain attribute: no custom pytest marker)."""
    unknown = [n for n in names if n not in CATALOG]
    assert not unknown, f"not in CATALOG: {unknown}"

    def mark(test):
        test.example_runs = names
        return test

    return mark


def plugin_env(cache_dir: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    # two runs at a time on two cores: OpenMP threads of one would spin while the other runs
    env.update(TORCHINDUCTOR_CACHE_DIR=str(cache_dir), TORCHINDUCTOR_COMPILE_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("FUSION_EXAMPLE_FAULTS", None)
    env.pop("EXAMPLE_KERNEL", None)
    env.update(extra or {})
    return env


class ExampleRuns(RunPool):
    def __init__(self, root: Path, cache_dir: Path):
        super().__init__(CATALOG, root, cache_dir)

    def get(self, name: str) -> Run:
        run = super().get(name)
        assert run.returncode == 0, run.describe()
        return run

    def _run(self, name: str) -> Run:
        config = CATALOG[name]
        cwd = self.root / name.replace("/", "__")
        cwd.mkdir(parents=True)
        run_dir = cwd / "run"
        spec_path = cwd / "spec.json"
        spec_path.write_text(json.dumps({"output_dir": str(run_dir), **config.spec}))
        proc = subprocess.run(
            [
                PYTHON,
                "-m",
                "diagnose_pytorch",
                "run",
                "--spec",
                str(spec_path),
                str(EXAMPLES / config.example / "model.py"),
            ],
            cwd=cwd,
            env=plugin_env(self.cache_dir, config.env),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        return Run(name, run_dir, cwd, proc.returncode, proc.stdout, proc.stderr)


_shared: ExampleRuns | None = None


@pytest.fixture(scope="session")
def example_runs(request, tmp_path_factory, inductor_cache) -> ExampleRuns:
    """One pool for the whole session: test modules import this fixture, and pytest makes a
    fixture of each import, so the pool itself is a module global."""
    global _shared
    if _shared is None:
        _shared = ExampleRuns(tmp_path_factory.mktemp("example_runs"), inductor_cache)
        _shared.start(
            name
            for item in request.session.items
            for name in getattr(getattr(item, "function", None), "example_runs", ())
        )
        request.config.add_cleanup(_shared.shutdown)
    return _shared


@pytest.fixture(scope="session")
def example_cache(example_runs) -> Path:
    return example_runs.cache_dir


def run_module(
    args: list[str], cache_dir: Path, cwd: Path, env: dict | None = None, timeout: int = TIMEOUT
) -> subprocess.CompletedProcess:
    """`python -m diagnose_pytorch ARGS` (the ops and single-op commands)."""
    return subprocess.run(
        [PYTHON, "-m", "diagnose_pytorch", *args],
        cwd=cwd,
        env=plugin_env(cache_dir, env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
