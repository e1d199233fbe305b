"""The op calls of an eager ATen-level dump, read from its manifest alone: what `ops` lists and
`single-op` replays. No torch here, so that listing a run's ops starts no torch."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


class SingleOpError(ValueError):
    pass


@dataclass
class RecordedCall:
    op: str
    op_key: str
    seq: int
    step: int
    call: dict | None = None
    inputs: dict = field(default_factory=dict)  # (index, item) -> input record


def dump_dir(run_dir: Path) -> Path:
    for candidate in (run_dir / "dump", run_dir / "dump" / "rank0"):
        if (candidate / "manifest.jsonl").is_file():
            return candidate
    raise SingleOpError(f"{run_dir}: no eager dump (dump/manifest.jsonl) in this run directory")


def recorded_calls(run_dir: Path) -> tuple[Path, list[RecordedCall]]:
    """The op calls of an eager ATen-level dump, in execution order."""
    dump = dump_dir(run_dir)
    calls: dict[int, RecordedCall] = {}
    manifest = dump / "manifest.jsonl"
    for line_no, line in enumerate(manifest.read_text().splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line of a killed run
        if record.get("type") == "header" and record.get("level") != "aten":
            raise SingleOpError(
                f"{manifest}:{line_no}: dump level {record.get('level')!r}; the "
                "single-op check needs an eager run dumped at level 'aten'"
            )
        if record.get("type") != "tensor" or record.get("kind", "op") != "op" or "op" not in record:
            continue
        seq = record["seq"]
        call = calls.setdefault(seq, RecordedCall(record["op"], record["op_key"], seq, record.get("step", 0)))
        if "call" in record and call.call is None:
            call.call = record["call"]
        if record["io"] == "input":
            call.inputs[(record["index"], record.get("item"))] = record
    return dump, list(calls.values())


def distinct_ops(calls: list[RecordedCall]) -> dict[str, list[RecordedCall]]:
    ops: dict[str, list[RecordedCall]] = {}
    for call in calls:
        ops.setdefault(call.op, []).append(call)
    return ops


def list_ops(run_dir: str) -> list[dict]:
    _, calls = recorded_calls(Path(run_dir))
    return [{"op": name, "calls": len(op_calls)} for name, op_calls in distinct_ops(calls).items()]
