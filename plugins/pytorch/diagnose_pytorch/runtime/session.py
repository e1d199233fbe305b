"""One run of a model under a run spec: the dump writers, the step counter, the filters and
the status file. Exactly one session is active per process."""

from __future__ import annotations

import os
import random
import re
import time

import numpy as np
import torch

from ..checks.isolation import Isolation
from ..checks.meta_check import MetaChecker
from ..dump.call_state import CallState, StateTensor
from ..dump.dump_writer import DumpWriter, dumpable
from ..dump.eager_dump import SINGLE_OP_RESERVE, EagerDumper
from ..dump.output_tree import output_tensors
from ..dump.provenance import Snapshots
from ..dump.shadow import Shadows
from ..spec import RunSpec
from ..status import RunStatus
from ..switches import apply_switches
from .graph_info import collect_graph_info

_active: "Session | None" = None


def active() -> "Session | None":
    return _active


class Session:
    def __init__(self, spec: RunSpec):
        global _active
        if _active is not None:
            raise RuntimeError("a diagnose session is already active in this process")
        self.spec = spec
        self.level = spec.dump_level()
        self.rank = int(os.environ.get("RANK", "0"))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        rank_part = f"rank{self.rank}" if self.world_size > 1 else ""
        run_dir = spec.run_dir
        self.status = RunStatus(run_dir / self.rank_file_name("status.json"), spec.to_dict())
        self.dump_dir = run_dir / "dump" / rank_part
        self.outputs_dir = run_dir / "outputs" / rank_part
        header = {
            "mode": spec.mode,
            "backend": spec.backend,
            "device": spec.device,
            "dtype": spec.dtype or spec.autocast or "float32",
            "level": self.level,
            "rank": self.rank,
            "world_size": self.world_size,
        }
        # float64 shadow execution (shadow.py): kept for the whole session, across graphs and calls
        self.shadows = Shadows() if spec.dump.truth and spec.shadows_ops() else None
        if self.shadows is not None:
            header["truth"] = True
        # TorchAir writes its own dump layouts into dump/; the manifest would confuse readers.
        torchair_dump = spec.mode == "compiled" and spec.backend == "torchair"
        self.dump = (
            DumpWriter(
                self.dump_dir,
                header,
                stats_only=spec.dump.stats_only,
                tensor_io=spec.dump.tensor_io,
                max_bytes=spec.dump.max_bytes,
                # an eager ATen dump's inputs feed the single-op check: each op signature's first
                # call gets its inputs from a reserve (eager_dump.py)
                reserved_bytes=int((spec.dump.max_bytes or 0) * SINGLE_OP_RESERVE) if self.level == "aten" else 0,
            )
            if self.level != "none" and not torchair_dump
            else None
        )
        self.outputs = DumpWriter(self.outputs_dir, header) if spec.dump.final else None
        # eager mode: the dispatch mode dumps the ops, or only shadows them (level none with truth)
        dumps_ops = self.level == "aten" and self.dump is not None
        eager_ops = spec.mode == "eager" and (dumps_ops or self.shadows is not None)
        self.eager_dumper = EagerDumper(self) if eager_ops else None
        self.meta_checker = (
            MetaChecker(run_dir / self.rank_file_name("meta_check.json"))
            if spec.checks.meta and self.eager_dumper
            else None
        )
        self.provenance = Snapshots()
        self.call_state: CallState | None = None  # the outermost call's, while it runs
        self.isolation = None
        if spec.isolation is not None:
            self.isolation = Isolation(self)
        self.step = 0
        self.explicit_steps = False
        self.call_depth = 0
        self.graph_count = 0
        self._seq = 0
        self._include = [re.compile(p) for p in spec.dump.include]
        self._exclude = [re.compile(p) for p in spec.dump.exclude]
        self._call_started = 0.0
        self.status.record_ran(
            mode=spec.mode,
            backend=spec.backend,
            device=spec.device,
            dtype=spec.dtype,
            autocast=spec.autocast,
            dump_level=self.level,
            dynamic=spec.dynamic,
            fullgraph=spec.fullgraph,
        )
        self.status.record_dump(directory=str(self.dump_dir), outputs=str(self.outputs_dir))
        seed_and_determinism(spec)
        apply_switches(spec.backend, spec.switches, self.status)
        _active = self

    def rank_file_name(self, name: str) -> str:
        """A file of the run directory that each rank writes: rank 0's under `name` (what the engine
        reads of every run), another rank's as status_rank1.json."""
        if self.rank == 0:
            return name
        stem, dot, suffix = name.rpartition(".")
        return f"{stem}_rank{self.rank}{dot}{suffix}"

    # --- identity and selection -------------------------------------------------------
    def next_seq(self) -> int:
        self._seq += 1
        return self._seq - 1

    def new_graph(self) -> int:
        self.graph_count += 1
        self.status.record_graph_count(self.graph_count)
        return self.graph_count - 1

    def step_chosen(self) -> bool:
        """Whether `dump.steps` chooses this step (every step without it)."""
        steps = self.spec.dump.steps
        return steps is None or self.step in steps

    def dumping(self) -> bool:
        """Whether this step is dumped at all."""
        return self.dump is not None and self.step_chosen()

    def shadowing(self) -> bool:
        """Whether this step's ops are shadowed in float64 (dump.truth; shadow.py)."""
        return self.shadows is not None and self.step_chosen()

    def dumping_ops(self) -> bool:
        return self.spec.dump.ops and self.dumping()

    def selected(self, op_key: str, op: str = "", module: str = "") -> bool:
        names = (op_key, op, module)
        if self._include and not any(p.search(n) for p in self._include for n in names if n):
            return False
        return not any(p.search(n) for p in self._exclude for n in names if n)

    def wants_io(self, io: str) -> bool:
        return io in self.spec.dump.io

    def write(
        self,
        value,
        *,
        seq: int,
        op_key: str,
        io: str,
        index: int,
        item=None,
        needed: bool = False,
        reuse: bool = False,
        **fields,
    ) -> None:
        """Writes one tensor record; non-tensors (and fake/meta tensors) are skipped. `needed`
        and `reuse`: DumpWriter.write_tensor's."""
        if not dumpable(value):
            return
        record = {"seq": seq, "kind": fields.pop("kind", "op"), "op_key": op_key, "io": io, "index": index}
        if item is not None:
            record["item"] = item
        record.update({k: v for k, v in fields.items() if v is not None})
        record["step"] = self.step
        truth = self._truth(self.shadows.peek(value) if self.shadows else None)
        self.dump.write_tensor(value, record, needed=needed, reuse=reuse, **truth)

    @staticmethod
    def _truth(entry) -> dict:
        """write_tensor's truth arguments from a shadow entry (shadow.py)."""
        if entry is None:
            return {}
        return {"truth": entry.shadow if entry.truth else None, "precision": entry.precision}

    def write_args(self, args, *, seq: int, op_key: str, io: str, **fields) -> None:
        """Writes positional values: a tensor at position i is index i; a list or tuple of
        tensors at position i gives one record per element, `item` j."""
        for index, value in enumerate(args):
            if isinstance(value, (list, tuple)):
                for item, element in enumerate(value):
                    self.write(element, seq=seq, op_key=op_key, io=io, index=index, item=item, **fields)
            else:
                self.write(value, seq=seq, op_key=op_key, io=io, index=index, **fields)

    # --- steps and top-level calls ------------------------------------------------------
    def set_step(self, step: int) -> None:
        self.explicit_steps = True
        self.step = step

    def begin_call(self) -> bool:
        """Returns True for the outermost call (the one that counts as a step)."""
        self.call_depth += 1
        if self.call_depth > 1:
            return False
        self._call_started = time.perf_counter()
        return True

    def end_call(self, outputs, state: CallState | None = None) -> None:
        self.call_depth -= 1
        if self.call_depth:
            return
        elapsed = time.perf_counter() - self._call_started
        self.status.record_call(self.step, elapsed)
        if self.shadows is not None:
            self.shadows.settle()
        if self.dump is not None:
            self.dump.views.clear()  # the user's code may write anything before the next call
        if outputs is not None:
            self._write_final(outputs)
        if state is not None:
            self._write_state(state.after())
        self.status.record_step_done(self.step)
        if not self.explicit_steps:
            self.step += 1
        if self.meta_checker is not None:
            self.meta_checker.save()
        self.status.save()

    def _write_final(self, outputs) -> None:
        """One record per tensor reachable from the return value (output_tree.py), named by its
        `path` there; `index` is its position among the flattened leaves (pytree's leaf index for
        pytree containers; an object pytree does not know, such as a cache, now counts each of its
        tensors, so later indexes differ from dumps made before paths, which pair by path)."""
        seq = self.next_seq()
        for output in output_tensors(outputs):
            if not dumpable(output.tensor):
                continue
            record = {
                "seq": seq,
                "kind": "final",
                "op_key": "output",
                "io": "output",
                "index": output.index,
                "path": output.path,
                "step": self.step,
            }
            # the shadow of the returned tensor, if it is in sync (no lazy cast: that is no truth)
            truth = self._truth(self.shadows.lookup(output.tensor, create=False) if self.shadows else None)
            if self.outputs is not None:
                self.outputs.write_tensor(output.tensor, record, **truth)
            if self.spec.dump.final and self.dumping():
                self.dump.write_tensor(output.tensor, record, **truth)

    def _write_state(self, state: list[StateTensor]) -> None:
        """One record per state tensor (kind `state`, op_key `state`, named by `path`), beside the
        final outputs; in eager mode its `sources` name the op and line that last wrote it."""
        seq = self.next_seq()
        writers = self.eager_dumper.mode.writers if self.eager_dumper is not None else None
        for index, item in enumerate(state):
            if not dumpable(item.tensor):
                continue
            record = {"seq": seq, "kind": "state", "op_key": "state", "io": "output", "index": index}
            record.update(path=item.path, step=self.step)
            source = writers.source_of(item.tensor) if writers is not None else None
            if source is not None:
                record["sources"] = [source]
            truth = self._truth(self.shadows.lookup(item.tensor, create=False) if self.shadows else None)
            if self.outputs is not None:
                self.outputs.write_tensor(item.tensor, record, **truth)
            if self.spec.dump.final and self.dumping():
                self.dump.write_tensor(item.tensor, record, **truth)

    # --- end of run ---------------------------------------------------------------------
    def close(self, error: BaseException | None = None) -> None:
        global _active
        if error is not None:
            self.status.add_error(error, "run")
        collect_graph_info(self)
        if self.meta_checker is not None:
            self.meta_checker.save()
        for writer in (self.dump, self.outputs):
            if writer is not None:
                writer.close()
        if self.dump is not None:
            self.status.record_dump(
                records=self.dump.records,
                written_bytes=self.dump.written_bytes,
                budget_reached=self.dump.budget_reached,
                not_kept=self.dump.not_kept,
            )
        if self.shadows is not None:
            self.status.record_truth(self.shadows.summary())
        if self.isolation is not None:
            self.isolation.close()
        self.status.finish("error" if error is not None else "ok")
        _active = None


def seed_and_determinism(spec: RunSpec) -> None:
    if spec.seed is not None:
        random.seed(spec.seed)
        torch.manual_seed(spec.seed)
        np.random.seed(spec.seed)
    if spec.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
