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


# The top-level fields of status.json, as docs/run-spec.md describes them (its test compares).
FIELDS = (
    "format",
    "version",
    "state",
    "spec",
    "argv",
    "pid",
    "torch_version",
    "features",
    "ran",
    "graphs",
    "switches",
    "steps",
    "calls",
    "dump",
    "timings",
    "compile_calls",
    "errors",
    "exit_code",
    "configuration",
    "truth",
    "isolation",
    "inductor_rules",
    "inductor_buffers",
    "inductor_unmapped",
)


class RunStatus:
    """The run's status.json: each writer says what it records through a method, the file's
    fields named in this class alone."""

    def __init__(self, path: Path, spec_dict: dict):
        self.path = path
        self.started = time.time()
        self._data = {
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

    # --- what ran -----------------------------------------------------------------------
    def record_ran(self, **facts) -> None:
        """How the run ran: its mode, backend, device... and the script with its arguments."""
        self._data["ran"].update(facts)

    def record_exit_code(self, code: int) -> None:
        self._data["exit_code"] = code

    def record_configuration(self, facts: dict) -> None:
        """How the script set torch up when it compiled (status.configuration)."""
        self._data["configuration"] = facts

    def record_compile_call(self, target: str, requested: dict) -> None:
        self._data["compile_calls"].append({"target": target, "requested": requested})

    def record_call(self, step: int, seconds: float) -> None:
        """A top-level call of the compiled model: its step and duration."""
        self._data["calls"].append({"step": step, "seconds": round(seconds, 6)})

    def record_step_done(self, step: int) -> None:
        """The steps the model ran so far: at least this one."""
        self._data["steps"] = max(self._data["steps"], step + 1)

    # --- what the compiler did ------------------------------------------------------------
    def record_graph_count(self, count: int) -> None:
        self._data["graphs"]["count"] = count

    def record_compile_seconds(self, seconds: float) -> None:
        self._data["graphs"]["compile_seconds"].append(round(seconds, 6))

    def record_graph_values(self, value_bytes: int, elements: int) -> None:
        """The values a compiled graph's nodes compute in one call (dump.fx_dump.graph_values)."""
        graphs = self._data["graphs"]
        graphs["value_bytes"] = graphs.get("value_bytes", 0) + value_bytes
        graphs["value_elements"] = graphs.get("value_elements", 0) + elements

    def record_graph_breaks(self, breaks: dict) -> None:
        """Dynamo's graph breaks: their reasons with how often each broke the graph."""
        graphs = self._data["graphs"]
        graphs["graph_breaks"] = sum(breaks.values())
        graphs["break_reasons"] = {str(k): v for k, v in breaks.items()}
        graphs["graph_break_reasons"] = [str(k) for k in breaks]

    def record_recompiles(self, count: int, reasons: list[str]) -> None:
        """How often Dynamo recompiled and the first guards that failed."""
        self._data["graphs"]["recompiles"] = count
        self._data["graphs"]["recompile_reasons"] = reasons

    def record_active_switch(self, name: str, value) -> None:
        """A switch in force during the run (inductor, torchair, fusion_switch_file)."""
        self._data["switches"]["active"][name] = value

    def record_fired(self, name: str, value) -> None:
        """What the compiler reports it applied (inductor_counters, fusion_result)."""
        self._data["switches"]["fired"][name] = value

    def record_inductor_rules(self, rules: dict) -> None:
        self._data["inductor_rules"] = rules

    def record_inductor_buffers(self, graph_id: int, buffers: int, unmapped: list) -> None:
        """The buffers of one compiled graph the dump maps to FX nodes, and those it cannot."""
        self._data.setdefault("inductor_buffers", {})[str(graph_id)] = buffers
        if unmapped:
            self._data.setdefault("inductor_unmapped", {})[str(graph_id)] = unmapped

    # --- what was written -------------------------------------------------------------------
    def record_dump(self, **facts) -> None:
        """Where the dump went and, at the end, what it wrote and what its budget left out."""
        self._data["dump"].update(facts)

    def record_truth(self, summary: dict) -> None:
        self._data["truth"] = summary

    def record_isolation(self, report: dict) -> None:
        """The isolation run's report; the caller keeps filling it in."""
        self._data["isolation"] = report

    def add_error(self, exc: BaseException, where: str) -> None:
        self._data["errors"].append(
            {
                "where": where,
                "type": type(exc).__name__,
                "message": str(exc),
                "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            }
        )

    def finish(self, state: str) -> None:
        self._data["state"] = state
        self._data["timings"]["total_seconds"] = round(time.time() - self.started, 6)
        self.save()

    def save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self._data, f, indent=1, default=str)
        os.replace(tmp, self.path)


def _torch_version() -> str:
    return torch.__version__


def _probed_features() -> dict:
    return compat.probed


def configuration(root) -> dict:
    """What the known-cause detectors read (steps/causes/known_causes.h), as the script set it up when it
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
