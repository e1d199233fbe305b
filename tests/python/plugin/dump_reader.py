"""A small independent reader of diagnose dumps (docs/dump-format.md) for the plugin tests."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Dump:
    root: Path
    header: dict
    tensors: list[dict]
    budget: dict | None
    end: dict | None
    torn_lines: int

    def key(self, record: dict) -> tuple:
        return (record.get("graph"), record.get("step", 0), record["op_key"], record["io"],
                record["index"], record.get("item"))

    def by_key(self) -> dict[tuple, dict]:
        return {self.key(r): r for r in self.tensors}

    def load(self, record: dict) -> np.ndarray:
        return np.load(self.root / record["file"], allow_pickle=False)

    def ops(self, io: str = "output", kind: str = "op") -> list[dict]:
        return [r for r in self.tensors if r["io"] == io and r.get("kind", "op") == kind]


def read_dump(root: Path) -> Dump:
    header, tensors, budget, end, torn = None, [], None, None, 0
    for line in (Path(root) / "manifest.jsonl").read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            torn += 1
            continue
        kind = record["type"]
        if kind == "header":
            header = record
        elif kind == "tensor":
            tensors.append(record)
        elif kind == "budget":
            budget = record
        elif kind == "end":
            end = record
    return Dump(Path(root), header, tensors, budget, end, torn)
