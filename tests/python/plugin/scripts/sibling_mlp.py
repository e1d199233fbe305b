"""Imported by endless.py from the script's own directory."""

import runpy
from pathlib import Path

MLP = runpy.run_path(str(Path(__file__).resolve().parents[4] / "examples" / "mlp" / "model.py"))["MLP"]
