"""The single-op check: every distinct op of an eager ATen-level dump is run again with its
real recorded inputs, eagerly and as a one-op graph (torch.compile(fullgraph=True,
dynamic=False) with the run's backend and global switches), and both results are written as
diagnose dumps with the same op_key, for `diagnose compare -gp OUT/eager -mp OUT/graph`.

With Inductor, the ops go first through batched compiles: one compile of about --batch-graphs
one-op graphs side by side, each on its own inputs (no buffer is shared, so Inductor fuses nothing
across them). An op whose every batched result is within one epsilon of eager (closer than any
default tolerance) is settled by the batch; any other op, and every op of a batch that fails,
is then checked alone as before, so that every failing op's evidence comes from it alone.

    python -m diagnose_pytorch ops --from EAGER_RUN_DIR
    python -m diagnose_pytorch single-op --from EAGER_RUN_DIR --out OUT --backend B
        [--device D] [--dtype T] [--switches SWITCHES.json] [--ops A,B] [--max-calls-per-signature K]
        [--batch-graphs N]
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from .. import compat
from ..backends.spec_backend import resolve
from ..backends.torchair import switched_npu_backend
from ..collectives import COLLECTIVE, is_collective
from ..dump.call_args import NotReplayable, decode_call
from ..dump.dump_writer import DumpWriter, dumpable
from ..inductor_rules_fired import note_compile, report
from ..main_script import ScriptSetupError, run_until_first_compiled_call
from ..spec import Switches, _build
from ..status import RunStatus
from ..switches import apply_switches, inductor_overrides
from .recorded_calls import RecordedCall, SingleOpError, distinct_ops, recorded_calls
from .uninitialized_ops import UNINITIALIZED, is_uninitialized_op


def _load_tensor(dump: Path, record: dict) -> torch.Tensor:
    if "file" not in record:
        raise NotReplayable(f"{record['op_key']} input {record['index']} has statistics only")
    # a file may be shared by records viewing its elements at other shapes (docs/dump-format.md)
    array = np.load(dump / record["file"], allow_pickle=False).reshape(record["shape"])
    dtype = getattr(torch, record["dtype"].removeprefix("torch."))
    return torch.from_numpy(np.ascontiguousarray(array)).to(dtype)


# --- the run's environment: its script's definitions (custom ops, backends) and switches ----
def set_up_script(run_dir: Path) -> None:
    """What the eager run's script defines, here: the script run as that run ran it, up to its
    first compiled call (main_script.py). Raises ScriptSetupError when it cannot get there."""
    status_path = run_dir / "status.json"
    if status_path.is_file():
        run_until_first_compiled_call(json.loads(status_path.read_text()).get("ran", {}), "the single-op check")


# Inductor options that combine nodes sharing no buffer (batch fusions of independent linears,
# combo kernels, fusing pointwise nodes without shared data): off by default, and a batch is
# compiled only while all are off, so that no one-op graph in it compiles otherwise than alone.
_COMBINING_OPTIONS = ("pre_grad_fusion_options", "post_grad_fusion_options", "combo_kernels", "aggressive_fusion")


def _batch_faithful(backend: str, switches: Switches) -> bool:
    """Whether one-op graphs compiled together compile as each would alone: with Inductor, whose
    scheduler fuses only nodes that share a buffer, while no combining option is on. Other
    backends (a graph engine's fusion rules) are not known to keep independent ops apart."""
    if backend != "inductor":
        return False
    overrides = inductor_overrides(switches)
    return not any(overrides.get(name, getattr(compat.inductor_config, name, None)) for name in _COMBINING_OPTIONS)


def make_backend(name: str, switches: Switches):
    """The backend as the full run had it, with the same global switches."""
    apply_switches(name, switches)
    if name == "torchair":
        return switched_npu_backend(switches)
    if name == "inductor":
        overrides = inductor_overrides(switches)

        def inductor(gm, example_inputs):
            with compat.inductor_config.patch(overrides):
                note_compile()
                return compat.compile_fx(gm, example_inputs)

        return inductor
    return resolve(name)


def resolve_op(name: str):
    namespace, op_name, overload = name.split(".", 2) if name.count(".") >= 2 else (None,) * 3
    try:
        return getattr(getattr(getattr(torch.ops, namespace), op_name), overload)
    except (AttributeError, TypeError, RuntimeError):
        raise SingleOpError(f"operator {name} is not registered in this process") from None


# --- one op --------------------------------------------------------------------------------
def _one_op_graph(op, args, kwargs):
    """A function of the call's tensors alone (the rest is fixed), for torch.compile."""
    positions = []
    for i, value in enumerate(args):
        if isinstance(value, torch.Tensor):
            positions.append((i, None))
        elif isinstance(value, (list, tuple)):
            positions.extend((i, j) for j, v in enumerate(value) if isinstance(v, torch.Tensor))

    def tensors_of(call_args):
        return [call_args[i] if j is None else call_args[i][j] for i, j in positions]

    def one_op(*tensors):
        call_args = [list(v) if isinstance(v, (list, tuple)) else v for v in args]
        for (i, j), tensor in zip(positions, tensors):
            if j is None:
                call_args[i] = tensor
            else:
                call_args[i][j] = tensor
        return op(*call_args, **kwargs)

    return one_op, tensors_of(args)


def _prepared_inputs(dump: Path, call: RecordedCall, device: str, dtype):
    if call.call is None:
        raise NotReplayable(
            "the dump does not record this call's arguments (inputs filtered out, or dumped by an older plugin)"
        )
    inputs = {}
    for key, record in call.inputs.items():
        tensor = _load_tensor(dump, record).to(device)
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        inputs[key] = tensor.contiguous()
    return inputs


def _signature(call: RecordedCall) -> str:
    """What decides a one-op graph's compiled code: the call's non-tensor arguments and where its
    tensors go (the `call` field), and each input's shape, dtype and strides."""
    inputs = sorted(
        (index, -1 if item is None else item, r.get("shape"), r.get("dtype"), r.get("stride"))
        for (index, item), r in call.inputs.items()
    )
    return json.dumps([call.call, inputs], sort_keys=True)


def _replayable(call: RecordedCall) -> bool:
    return call.call is not None and all("file" in record for record in call.inputs.values())


def _calls_to_check(calls: list[RecordedCall], per_signature: int) -> tuple[list[RecordedCall], int]:
    """Up to `per_signature` calls of each distinct signature, those whose inputs the dump kept,
    grouped by signature in order of first appearance (one compile serves a group; compiling
    another signature resets Dynamo): a layer repeated N times is checked once. Also the number
    of signatures none of whose calls can be replayed. When no call can be, the first call alone
    (its replay says why not)."""
    by_signature: dict[str, list[RecordedCall]] = {}
    for call in calls:
        by_signature.setdefault(_signature(call), []).append(call)
    chosen, missing = [], 0
    for group in by_signature.values():
        replayable = [call for call in group if _replayable(call)][:per_signature]
        chosen += replayable
        missing += not replayable
    return (chosen, missing) if chosen else (calls[:1], missing)


def _timed(function, *args):
    """function(*args) and the seconds it took."""
    started = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - started


def _clone(tree):
    return compat.pytree.tree_map_only(torch.Tensor, torch.clone, tree)


# Two seeds under which a seeded op (nondeterministic_seeded: dropout, attention, random
# fills) runs twice: a result the seed does not change uses no randomness and can be checked.
SEEDS = (0, 1)
RANDOM = "results depend on the RNG (two seeds give different results)"


def _run_seeded(op, args, kwargs, seed: int | None):
    if seed is not None:
        torch.manual_seed(seed)
    return op(*_clone(args), **_clone(kwargs))


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)


def _same_bits(x, y) -> bool:
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
        return x.dtype == y.dtype and x.shape == y.shape and torch.equal(_bytes(x), _bytes(y))
    return not isinstance(x, torch.Tensor) and not isinstance(y, torch.Tensor) and bool(x == y)


def _bitwise_equal(a, b) -> bool:
    """The same structure, and every tensor the same dtype, shape and bytes (NaNs included)."""
    leaves_a, structure_a = compat.pytree.tree_flatten(a)
    leaves_b, structure_b = compat.pytree.tree_flatten(b)
    return structure_a == structure_b and all(map(_same_bits, leaves_a, leaves_b))


def _within_an_epsilon(x, y) -> bool:
    """x and y the same dtype and shape, y's non-finite values exactly x's, and every other element
    within one epsilon of the dtype, absolute and relative to x: |y - x| <= eps + eps * |x|;
    integers and bool equal. Stricter than the allclose of every default tolerance preset of the
    comparison (compare/judge.cc: atol and rtol each above one epsilon of their dtype)."""
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        return _same_bits(x, y)
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if not x.is_floating_point():
        return _same_bits(x, y)
    eps = torch.finfo(x.dtype).eps
    x, y = x.detach().cpu().double(), y.detach().cpu().double()
    finite = torch.isfinite(x)
    if not torch.equal(finite, torch.isfinite(y)) or not torch.equal(x[~finite].isnan(), y[~finite].isnan()):
        return False
    if not torch.equal(x[~finite].nan_to_num(), y[~finite].nan_to_num()):  # the same infinities
        return False
    return bool(((y - x).abs()[finite] <= eps + eps * x.abs()[finite]).all())


def _settled_by_batch(eager_out, graph_out) -> bool:
    """Whether a batched one-op graph's result is close enough to eager to be kept without
    compiling the op alone: the same structure, every tensor _within_an_epsilon of eager's."""
    leaves_e, structure_e = compat.pytree.tree_flatten(eager_out)
    leaves_g, structure_g = compat.pytree.tree_flatten(graph_out)
    return structure_e == structure_g and all(map(_within_an_epsilon, leaves_e, leaves_g))


class Check:
    def __init__(self, options):
        self.switches = _read_switches(options.switches)
        self.out = Path(options.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.device = options.device
        self.dtype = getattr(torch, options.dtype) if options.dtype else None
        self.backend_name = options.backend
        self.per_signature = options.max_calls_per_signature
        self.batch_graphs = options.batch_graphs if _batch_faithful(options.backend, self.switches) else 0
        self.results: list[dict] = []
        self.batched: list[dict] = []  # each batched compile: {"ops", "graphs", "compile_s", "settled", "error"}
        self.extra: dict = {}  # what single_op.json says besides
        header = {
            "backend": options.backend,
            "device": options.device,
            "dtype": options.dtype or "float32",
            "level": "aten",
            "check": "single_op",
        }
        self.eager = DumpWriter(self.out / "eager", {**header, "mode": "eager"})
        self.graph = DumpWriter(self.out / "graph", {**header, "mode": "compiled"})
        self.progress = open(self.out / "progress.jsonl", "a", encoding="utf-8")
        # The switches in force, for a rule search over these one-op graphs (fired Inductor rules).
        self.status = RunStatus(
            self.out / "status.json", {"check": "single_op", **header, "switches": options.switches}
        )

    def event(self, op: str, event: str, message: str = "", reason: str = "") -> None:
        record = {"op": op, "event": event, "message": message}
        if reason:
            record["reason"] = reason
        self._progress(record)

    def setup_failed(self, error: ScriptSetupError) -> None:
        """No op can be checked: the step reports this message instead of a bare exit status."""
        self._progress({"event": "setup_failed", "message": str(error)})
        self.status.add_error(error, "setup")
        self.status.finish("error")

    def _progress(self, record: dict) -> None:
        self.progress.write(json.dumps(record) + "\n")
        self.progress.flush()
        os.fsync(self.progress.fileno())

    def run_ops(self, dump: Path, ops: dict[str, list[RecordedCall]]) -> None:
        """Every op, in order, into self.results (saved after each): the ops that can be batched
        first through batched compiles, each closed once it holds batch_graphs one-op graphs or
        more (an op's calls stay together), the rest alone."""
        names = list(ops)
        while names:
            batch, prepared = [], {}
            while names and (not batch or sum(map(len, prepared.values())) < self.batch_graphs):
                batch.append(names.pop(0))
                if self.batch_graphs and (calls := self._prepare_for_batch(dump, batch[-1], ops[batch[-1]])):
                    prepared[batch[-1]] = calls
            graphs = sum(map(len, prepared.values()))
            settled = self._compile_batch(prepared) if graphs > 1 else None
            for name in batch:
                self.event(name, "start")
                try:
                    if settled and name in settled:
                        result = self._settle(name, prepared[name], settled[name])
                    else:
                        result = self.run_op(dump, name, ops[name])
                    if settled is not None and name in prepared and name not in settled:
                        result = self._batch_costs({**result, "settled_in_batched_compile": False}, prepared[name])
                except Exception as e:  # noqa: BLE001 — one op's failure must not stop the others
                    result = {
                        "op": name,
                        "calls": 0,
                        "status": "runtime_error",
                        "message": f"{type(e).__name__}: {_first_line(e)}",
                        "op_keys": [],
                    }
                self.results.append(result)
                self.event(name, _event_of(result["status"]), result["message"], result.get("reason", ""))
                self.save()

    def _prepare_for_batch(self, dump: Path, name: str, calls: list[RecordedCall]) -> list[tuple] | None:
        """The op's calls to check, each (call, eager result, eager seconds, one-op graph, its
        inputs), or None when the op keeps today's path alone: skipped kinds, seeded ops, a
        call that cannot be replayed or fails eagerly, no tensor output."""
        if is_uninitialized_op(name) or is_collective(name):
            return None
        try:
            op = resolve_op(name)
            if torch.Tag.nondeterministic_seeded in op.tags:
                return None
            chosen, unreplayable = _calls_to_check(calls, self.per_signature)
            if unreplayable:
                return None
            prepared = []
            for call in chosen:
                inputs = _prepared_inputs(dump, call, self.device, self.dtype)
                args, kwargs = decode_call(call.call, inputs, self.device if self.device else None)
                eager_out, seconds = _timed(_run_seeded, op, args, kwargs, None)
                if not any(isinstance(v, torch.Tensor) for v in compat.pytree.tree_leaves(eager_out)):
                    return None
                prepared.append((call, eager_out, seconds, *_one_op_graph(op, *_clone((args, kwargs)))))
            return prepared
        except Exception:  # noqa: BLE001 — the op alone says what is wrong
            return None

    def _compile_batch(self, prepared: dict[str, list[tuple]]) -> dict[str, dict]:
        """One compile of every prepared call's one-op graph, each on its own inputs: the graph
        results of the ops the batch settles (_settled_by_batch for every call), by op; none when
        the batch fails to compile or run."""
        graphs = [(fn, len(tensors)) for calls in prepared.values() for (_, _, _, fn, tensors) in calls]
        inputs = [t for calls in prepared.values() for (_, _, _, _, tensors) in calls for t in tensors]

        def batch(*tensors):
            outs, start = [], 0
            for fn, count in graphs:
                outs.append(fn(*tensors[start : start + count]))
                start += count
            return outs

        record = {"ops": len(prepared), "graphs": len(graphs), "compile_s": 0.0, "settled": 0, "error": ""}
        self.batched.append(record)
        self._progress({"event": "batched_compile", "ops": list(prepared), "graphs": len(graphs)})
        compat.dynamo_reset()
        backend = make_backend(self.backend_name, self.switches)
        compiled = torch.compile(batch, backend=backend, fullgraph=True, dynamic=False)
        started = time.perf_counter()
        try:
            outs = compiled(*inputs)
        except Exception as e:  # noqa: BLE001 — every op is then checked alone
            record["error"] = f"{type(e).__name__}: {_first_line(e)}"
            outs = None
        finally:
            record["compile_s"] = round(time.perf_counter() - started, 3)
            compat.dynamo_reset()
        if outs is None:
            return {}
        settled, position = {}, 0
        for name, calls in prepared.items():
            graph_outs = outs[position : position + len(calls)]
            position += len(calls)
            if all(_settled_by_batch(eager_out, out) for (_, eager_out, *_), out in zip(calls, graph_outs)):
                settled[name] = graph_outs
        record["settled"] = len(settled)
        return settled

    def _settle(self, name: str, calls: list[tuple], graph_outs: list) -> dict:
        """Writes the dumps of an op the batch settled and returns its result."""
        for (call, eager_out, *_), out in zip(calls, graph_outs):
            self._write(call, eager_out, out)
        result = {
            "op": name,
            "calls": len(calls),
            "status": "ok",
            "message": "",
            "op_keys": [call.op_key for call, *_ in calls],
            "compile_s": 0.0,
            "run_s": 0.0,
            "compiles": 0,
            "shared_compiles": [],
            "signatures_not_checked": 0,
            "settled_in_batched_compile": True,
        }
        return self._batch_costs(result, calls)

    def _batch_costs(self, result: dict, calls: list[tuple]) -> dict:
        """The result with its op's part of the last batch added: its share of the batch's
        compile (its graphs' part of it, failed or not) and its eager calls there."""
        batch = self.batched[-1]
        share = batch["compile_s"] * len(calls) / batch["graphs"]
        eager_s = sum(seconds for _, _, seconds, *_ in calls)
        return {
            **result,
            "compile_s": round(result["compile_s"] + share, 3),
            "run_s": round(result["run_s"] + eager_s, 3),
            "batched_compile": len(self.batched),
        }

    def run_op(self, dump: Path, name: str, calls: list[RecordedCall]) -> dict:
        """compile_s: the one-op graphs' first calls through the backend; run_s: the eager calls
        and the compiled calls of a graph compiled for an earlier call of the same signature
        (named in shared_compiles)."""
        result = {
            "op": name,
            "calls": 0,
            "status": "ok",
            "message": "",
            "op_keys": [],
            "compile_s": 0.0,
            "run_s": 0.0,
            "compiles": 0,
            "shared_compiles": [],
        }
        outcome = self._run_calls(dump, name, calls, result)
        return {**outcome, "compile_s": round(outcome["compile_s"], 3), "run_s": round(outcome["run_s"], 3)}

    def _run_calls(self, dump: Path, name: str, calls: list[RecordedCall], result: dict) -> dict:
        if is_uninitialized_op(name):
            return {**result, "status": "skipped", "reason": UNINITIALIZED, "message": UNINITIALIZED}
        if is_collective(name):
            return {**result, "status": "skipped", "reason": "collective", "message": COLLECTIVE}
        try:
            op = resolve_op(name)
        except SingleOpError as e:
            return {**result, "status": "skipped", "reason": "not registered", "message": str(e)}
        seeded = torch.Tag.nondeterministic_seeded in op.tags
        random_calls = 0
        backend = make_backend(self.backend_name, self.switches)
        last_compiled = None  # (signature, compiled one-op graph, the op_key it was compiled for)
        chosen, unreplayable = _calls_to_check(calls, self.per_signature)
        for call in chosen:
            try:
                inputs = _prepared_inputs(dump, call, self.device, self.dtype)
                args, kwargs = decode_call(call.call, inputs, self.device if self.device else None)
            except NotReplayable as e:
                return {**result, "status": "no_inputs", "message": f"{call.op_key}: {e}"}
            try:
                eager_out, seconds = _timed(_run_seeded, op, args, kwargs, SEEDS[0] if seeded else None)
                result["run_s"] += seconds
                if seeded:
                    again, seconds = _timed(_run_seeded, op, args, kwargs, SEEDS[1])
                    result["run_s"] += seconds
                    if not _bitwise_equal(eager_out, again):
                        random_calls += 1
                        continue
            except Exception as e:  # noqa: BLE001
                return {
                    **result,
                    "status": "runtime_error",
                    "message": f"{call.op_key}: eager: {type(e).__name__}: {e}",
                }
            leaves = compat.pytree.tree_leaves(eager_out)
            if not any(isinstance(v, torch.Tensor) for v in leaves):
                return {**result, "status": "skipped", "reason": "no tensor output", "message": "no tensor output"}
            fn, tensors = _one_op_graph(op, *_clone((args, kwargs)))
            signature = _signature(call)
            shared = last_compiled is not None and last_compiled[0] == signature
            if shared:
                _, compiled, compiled_as = last_compiled
                result["shared_compiles"].append({"op_key": call.op_key, "compiled_as": compiled_as})
            else:
                compat.dynamo_reset()
                compiled = torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)
            try:
                graph_out, seconds = _timed(compiled, *tensors)
            except compat.TorchDynamoException as e:
                return {
                    **result,
                    "status": "compile_error",
                    "message": f"{call.op_key}: {type(e).__name__}: {_first_line(e)}",
                }
            except Exception as e:  # noqa: BLE001
                return {
                    **result,
                    "status": "runtime_error",
                    "message": f"{call.op_key}: graph: {type(e).__name__}: {_first_line(e)}",
                }
            if shared:
                result["run_s"] += seconds
            else:
                last_compiled = (signature, compiled, call.op_key)
                result["compile_s"] += seconds
                result["compiles"] += 1
            self._write(call, eager_out, graph_out)
            result["calls"] += 1
            result["op_keys"].append(call.op_key)
        if random_calls and not result["calls"]:
            return {**result, "status": "skipped", "reason": "random", "message": RANDOM}
        notes = []
        if random_calls:
            notes.append(f"{random_calls} of {random_calls + result['calls']} calls not checked: {RANDOM}")
        if unreplayable:
            notes.append(f"{unreplayable} signature(s) not checked: the dump kept no call's inputs")
        result["message"] = "; ".join(notes)
        result["signatures_not_checked"] = unreplayable
        return result

    def _write(self, call: RecordedCall, eager_out, graph_out) -> None:
        for writer, out in ((self.eager, eager_out), (self.graph, graph_out)):
            outs = out if isinstance(out, (list, tuple)) else (out,)
            for index, value in enumerate(outs):
                values = value if isinstance(value, (list, tuple)) else [value]
                for item, tensor in enumerate(values):
                    if not dumpable(tensor):
                        continue
                    record = {
                        "seq": call.seq,
                        "kind": "op",
                        "op_key": call.op_key,
                        "op": call.op,
                        "io": "output",
                        "index": index,
                        "step": call.step,
                    }
                    if isinstance(value, (list, tuple)):
                        record["item"] = item
                    writer.write_tensor(tensor, record)

    def save(self) -> None:
        path = self.out / "single_op.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"ops": self.results, "batched_compiles": self.batched, **self.extra}, indent=1))
        os.replace(tmp, path)
        if self.backend_name == "inductor":
            self.status.record_inductor_rules(report(self.switches.inductor_off))
        self.status.save()

    def close(self) -> None:
        self.eager.close()
        self.graph.close()
        self.progress.close()


def _recorded_device(dump: Path) -> str:
    with open(dump / "manifest.jsonl", encoding="utf-8") as f:
        header = json.loads(f.readline())
    return header.get("device") or "cpu"


def _first_line(e: BaseException) -> str:
    """The exception's first line; for a backend failure, the backend's own exception."""
    inner = getattr(e, "inner_exception", None)
    if inner is not None:
        return f"{_first_line_of(e)} {type(inner).__name__}: {_first_line_of(inner)}"
    return _first_line_of(e)


def _first_line_of(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def _read_switches(path: str | None) -> Switches:
    if not path:
        return Switches()
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SingleOpError(f"switches file {path}: {e}") from None
    return _build(Switches, data, f"switches file {path}")


def _event_of(status: str) -> str:
    """The progress event of an op's result: errors (no_inputs too) could not be checked."""
    if status.endswith("_error") or status == "no_inputs":
        return "error"
    return "skipped" if status == "skipped" else "done"


def selected_ops(calls: list[RecordedCall], names: str | None) -> dict[str, list[RecordedCall]]:
    ops = distinct_ops(calls)
    if not names:
        return ops
    wanted = [n for n in names.split(",") if n]
    unknown = [n for n in wanted if n not in ops]
    if unknown:
        raise SingleOpError(f"--ops names ops the dump does not hold: {', '.join(unknown)}")
    return {n: ops[n] for n in wanted}


def run_single_op(options) -> int:
    run_dir = Path(options.source)
    dump, calls = recorded_calls(run_dir)
    if options.device is None:
        options.device = _recorded_device(dump)
    ops = selected_ops(calls, options.ops)
    check = Check(options)
    check.extra = {"from": str(run_dir), "backend": options.backend, "device": options.device, "dtype": options.dtype}
    try:
        set_up_script(run_dir)
    except ScriptSetupError as e:
        check.setup_failed(e)
        check.close()
        raise SingleOpError(str(e)) from None
    try:
        check.run_ops(dump, ops)
    finally:
        check.close()
    check.save()
    check.status.finish("ok")
    return 0
