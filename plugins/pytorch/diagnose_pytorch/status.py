"""status.json: what ran, with which backend and switches, how it went. Rewritten atomically
at each milestone, so a killed run still leaves the last state ("running")."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch

from . import compat

FORMAT = "diagnose-run-status"
VERSION = 1


class RunStatus:
    def __init__(self, path: Path, spec_dict: dict):
        self.path = path
        self.started = time.time()
        self.data = {
            "format": FORMAT,
            "version": VERSION,
            "state": "running",
            "spec": spec_dict,
            "argv": list(sys.argv),
            "pid": os.getpid(),
            "torch_version": _torch_version(),
            "features": _probed_features(),  # compat.probed itself: filled in as the run probes features
            "ran": {},
            "graphs": {
                "count": 0,
                "compile_seconds": [],
                "graph_breaks": 0,
                "break_reasons": {},
                "recompiles": 0,
                "recompile_reasons": [],
            },
            "switches": {"active": {}, "fired": {}},
            "steps": 0,
            "calls": [],
            "dump": {},
            "timings": {},
            "compile_calls": [],
            "errors": [],
        }
        self.save()

    def set(self, key: str, value) -> None:
        self.data[key] = value

    def update(self, key: str, **values) -> None:
        self.data[key].update(values)

    def add_error(self, exc: BaseException, where: str) -> None:
        self.data["errors"].append(
            {
                "where": where,
                "type": type(exc).__name__,
                "message": str(exc),
                "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            }
        )

    def finish(self, state: str) -> None:
        self.data["state"] = state
        self.data["timings"]["total_seconds"] = round(time.time() - self.started, 6)
        self.save()

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1, default=str)
        os.replace(tmp, self.path)


def _torch_version() -> str:
    return torch.__version__


def _probed_features() -> dict:
    return compat.probed


def configuration(root) -> dict:
    """What the known-cause detectors read (steps/known_causes.h), as the script set it up when it
    compiled: the module's training mode with its active dropout, TF32 and determinism flags."""
    facts = {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }
    if isinstance(root, torch.nn.Module):
        facts["training"] = root.training
        facts["active_dropout"] = [
            {"module": name, "p": module.p}
            for name, module in root.named_modules()
            if isinstance(module, compat.DropoutNd) and module.training and module.p > 0
        ]
    return facts
