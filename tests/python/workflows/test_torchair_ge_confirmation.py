"""A TorchAir GE op confirmed by an intervention run: the real torchair over the CANN stand-in,
whose GeluFusionPass is planted faulty, on a model with one GELU after a linear layer. The GE
dump names the GELU's op only by a node of TorchAir's ATen graph; the map the plugin writes beside
it (diagnose_graph_nodes_rank_0.json) ties that node to Dynamo's, and the run with that node run
eagerly (the rest compiled by TorchAir, where the GELU is no longer fused) matches eager."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures import real_torchair
from fixtures.compare_cli import find_binary

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import sys
import torch
from torch import nn

sys.path.append({examples!r})
import example_loop


class LinearGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.down = nn.Linear(32, 8)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


if __name__ == "__main__":
    args = example_loop.parser().parse_args()
    torch.manual_seed(0)
    example_loop.run("linear_gelu", torch.compile(LinearGelu().eval()), (4, 16), args)
"""


@pytest.mark.e2e
def test_a_ge_op_is_confirmed_through_the_map_of_graph_nodes(tmp_path: Path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT.format(examples=str(ROOT / "examples")))
    pythonpath = [*real_torchair.pythonpath(), str(ROOT / "plugins" / "pytorch")]
    workflow = {
        "name": "torchair_ge_confirmation",
        "model": {
            "script": str(script),
            "python": sys.executable,
            "backend": "torchair",
            "timeout": 600,
            "env": {"PYTHONPATH": os.pathsep.join(pythonpath), "CANN_STAND_IN_FAULTS": "GeluFusionPass"},
        },
        "defaults": {"slots": 1},
        "steps": [{"id": "graph_compare", "kind": "graph_dump_compare", "referee": True}],
    }
    (tmp_path / "workflow.yaml").write_text(json.dumps(workflow))  # JSON is YAML
    out = tmp_path / "out"
    subprocess.run(
        [str(find_binary()), str(tmp_path / "workflow.yaml"), "--output-dir", str(out), "--quiet"],
        env=dict(os.environ, DIAGNOSE_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=600,
    )
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    step = next(s for s in json.loads((run / "report.json").read_text())["steps"] if s["id"] == "graph_compare")
    graph_nodes = json.loads(next(run.rglob("diagnose_graph_nodes_rank_0.json")).read_text())["graphs"]
    assert any(nodes.get("gelu") for nodes in graph_nodes.values()), graph_nodes
    confirmation = step["metrics"]["confirmation"]
    assert confirmation["outcome"] == "confirmed" and confirmation["runs"] == 1, confirmation
    assert confirmation["candidate"] == "gelu-aten.gelu.default" and confirmation["graph_nodes"], confirmation
    assert step["metrics"]["culprit"] == "gelu-aten.gelu.default" and step["metrics"]["localized"] is True, step
    assert step["findings"][0]["message"].startswith("culprit confirmed: with `gelu-aten.gelu.default`"), step
