"""Calls a compiled MLP step after step until killed (for the SIGKILL test)."""
import itertools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples" / "mlp"))
from model import MLP  # noqa: E402

if __name__ == "__main__":
    torch.manual_seed(0)
    model = torch.compile(MLP().eval())
    with torch.no_grad():
        for step in itertools.count():
            model(torch.randn(8, 32))
