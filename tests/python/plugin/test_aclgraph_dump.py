"""TorchAir's reduce-overhead/npugraph_ex `.pt` dumps read as tensors only: `torch.load(
weights_only=True)`, so a file that would run code when unpickled is refused, not run."""

import os
import pickle

import numpy as np
import torch

from diagnose_pytorch.__main__ import main


class RunsCode:
    def __reduce__(self):
        return (os.system, ("touch executed",))


def test_tensors_become_npy_and_a_pickle_with_code_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "worldsize1_global_rank0"
    source.mkdir()
    torch.save(torch.arange(6, dtype=torch.float32).reshape(2, 3), source / "add_0.pt")
    torch.save(torch.tensor([1.5, -2.0], dtype=torch.bfloat16), source / "mul_device_0_0.pt")
    torch.save(RunsCode(), source / "evil_0.pt", pickle_module=pickle)
    assert main(["aclgraph-dump", "--from", str(source), "--out", str(tmp_path / "npy")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "npy" / "add_0.npy"), np.arange(6).reshape(2, 3))
    assert np.load(tmp_path / "npy" / "mul_device_0_0.npy").dtype == np.float32
    assert not (tmp_path / "npy" / "evil_0.npy").exists() and not (tmp_path / "executed").exists()
    assert "refused evil_0.pt" in capsys.readouterr().err
