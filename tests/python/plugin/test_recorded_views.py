"""An eager ATen dump reuses the statistics of a view it recorded before (recorded_views.py):
the records are those of a dump that walks every tensor again, through in-place ops, writes
through `.data` (a version counter of its own), storages freed and allocated again, and calls."""

import json

import torch

from diagnose_pytorch.dump import recorded_views
from diagnose_pytorch.runtime.session import Session
from diagnose_pytorch.spec import DumpSpec, RunSpec


def computation(weight: torch.Tensor, step: int) -> torch.Tensor:
    x = torch.arange(48.0).reshape(8, 6) / (7 + step)
    y = x @ weight.t()  # t's output is mm's input
    y.add_(1.0)  # an in-place op: its output record differs from its input record
    y.data.mul_(2.0)  # a write through .data moves another version counter
    for i in range(3):  # temporaries freed and allocated again at the same place
        y = y + torch.full((8, 6), float(i))
    return y.view(6, 8) * weight.t().sum()


def records(tmp_path, name: str) -> list[dict]:
    session = Session(RunSpec(output_dir=str(tmp_path / name), mode="eager", dump=DumpSpec(level="aten")))
    weight = torch.nn.Parameter(torch.randn(6, 6, generator=torch.Generator().manual_seed(0)))
    with torch.no_grad():
        for step in range(2):
            session.begin_call()
            with session.eager_dumper.active():
                out = computation(weight, step)
            weight.data.add_(0.5)  # between calls, where no mode sees it
            session.end_call(out)
    session.close()
    lines = (tmp_path / name / "dump" / "manifest.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "created"} for line in lines]


def test_reused_statistics_are_those_of_every_tensor_walked_again(tmp_path, monkeypatch):
    reused = records(tmp_path, "reused")
    walks = []
    original = recorded_views.RecordedViews.stats
    monkeypatch.setattr(recorded_views.RecordedViews, "stats", lambda self, t: walks.append(original(self, t)))
    walked = records(tmp_path, "walked")
    assert reused == walked
    assert sum(found is not None for found in walks) >= 10  # `t`'s output, each op's output read next...
