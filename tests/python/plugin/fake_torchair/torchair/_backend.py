"""The stand-in NPU backend: AOT Autograd, then either TorchAir's FX npy dump
(debug.data_dump) or a simulated GE graph (with graph txt, GE dump binaries and
fusion_result.json), both executing the FX graph eagerly on the CPU."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

_TESTS_PYTHON = Path(__file__).resolve().parents[3]
if str(_TESTS_PYTHON) not in sys.path:
    sys.path.insert(0, str(_TESTS_PYTHON))

from fixtures.dtypes import DTYPES  # noqa: E402
from fixtures.fx_dump import write_fx_tensor  # noqa: E402
from fixtures.ge_dump import GeOp, GeTensor, write_ge_dump  # noqa: E402
from fixtures.graph_txt import GraphOp, write_graph_txt  # noqa: E402

_SHORT_BY_TORCH = {d.torch_name: d.short for d in DTYPES.values()}
_GRAPH_RULES = {  # graph fusion rule -> the aten op it rewrites
    "MatMulBiasAddFusionPass": "addmm",
    "SoftmaxFusionPass": "_softmax",
    "LayerNormFusionPass": "native_layer_norm",
    "ConvBatchnormFusionPass": "_native_batch_norm_legit_no_training",
}
_UB_RULE = "TbeEltwiseFusionPass"  # chains of element-wise ops become one fused op
_graph_ids = itertools.count()
_ge_options: dict | None = None
_dump_stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d%H%M%S")


def get_npu_backend(*, compiler_config=None):
    from .configs.compiler_config import CompilerConfig

    config = compiler_config or CompilerConfig()

    def backend(gm, example_inputs):
        from torch._dynamo.backends.common import aot_autograd

        _init_ge(config)
        graph_id = next(_graph_ids)
        if config.debug.data_dump.type.value == "npy":
            compiler = _fx_dump_compiler(config, graph_id)
        else:
            compiler = _ge_compiler(config, graph_id)
        return aot_autograd(fw_compiler=compiler, keep_inference_input_mutations=True)(gm, example_inputs)

    return backend


def _init_ge(config) -> None:
    """GE's global options are fixed at its first initialisation in the process."""
    global _ge_options
    options = {
        "ge.fusionSwitchFile": config.fusion_config.fusion_switch_file.value,
        "ge.oo.level": config.ge_config.oo_level.value,
        "ge.optimizationSwitch": config.ge_config.optimization_switch.value,
        "ge.exportCompileStat": config.ge_config.export_compile_stat.value,
    }
    if _ge_options is None:
        _ge_options = options
    elif options != _ge_options:
        raise ValueError(
            f"Unsupport twice initialtion with different options {options} (first initialised with {_ge_options})"
        )


def _rank_dir() -> str:
    return f"worldsize{int(os.environ.get('WORLD_SIZE', '1'))}_global_rank{int(os.environ.get('RANK', '0'))}"


def _timestamp20() -> int:
    return int(datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d%H%M%S%f"))


def _fx_array(value) -> np.ndarray | None:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.numpy()
    if isinstance(value, (int, float, bool)) or (
        isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value)
    ):
        return np.array(value)
    return None


def _converted(node) -> bool:
    return node.op == "call_function" and node.target is not __import__("operator").getitem


# --- FX npy dump (debug.data_dump.type = "npy") --------------------------------------------
def _fx_dump_compiler(config, graph_id: int):
    root = Path(config.debug.data_dump.path.value)
    keep = config.debug.data_dump.filter

    def compiler(fx_gm, _inputs):
        steps = itertools.count()

        class Dumper(torch.fx.Interpreter):
            def run_node(self, node):
                if not _converted(node) or (keep is not None and keep(node) is None):
                    return super().run_node(node)
                key = f"{node.name}-{node.target}"
                stamp = _timestamp20()  # one timestamp per node call, as TorchAir writes
                args, _ = self.fetch_args_kwargs_from_env(node)
                for i, arg in enumerate(args):
                    if isinstance(arg, (list, tuple)) and any(isinstance(a, torch.Tensor) for a in arg):
                        for j, element in enumerate(arg):
                            self._save(key, "INPUT", (i, j), element, stamp)
                    else:
                        self._save(key, "INPUT", i, arg, stamp)
                out = super().run_node(node)
                for k, value in enumerate(out if isinstance(out, (list, tuple)) else (out,)):
                    self._save(key, "OUTPUT", k, value, stamp)
                return out

            def _save(self, key, io, index, value, stamp):
                array = _fx_array(value)
                if array is not None:
                    write_fx_tensor(self.step_dir, key, io, index, stamp, array)

        def run(args):
            dumper = Dumper(fx_gm)
            dumper.step_dir = root / _rank_dir() / f"graph_{graph_id}" / str(next(steps))
            return dumper.boxed_run(args)

        run._boxed_call = True
        return run

    return compiler


# --- simulated GE ------------------------------------------------------------------------
@dataclass
class _GeNode:
    name: str
    op_type: str
    fx: list  # the FX nodes it executes (several for a UB-fused op)
    rules: list[str] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)  # GE names of the ops fused into it


def _rule_states(config) -> dict[str, bool]:
    rules = list(_GRAPH_RULES) + [_UB_RULE]
    states = {r: config.ge_config.oo_level.value != "O1" for r in rules}
    path = config.fusion_config.fusion_switch_file.value
    if path:
        switch = json.loads(Path(path).read_text()).get("Switch", {})
        for section, names in (("GraphFusion", list(_GRAPH_RULES)), ("UBFusion", [_UB_RULE])):
            entries = switch.get(section, {})
            for name in names:
                value = entries.get(name, entries.get("ALL"))
                if value is not None:
                    states[name] = value == "on"
    for item in filter(None, (config.ge_config.optimization_switch.value or "").split(";")):
        name, _, value = item.partition(":")
        if name in states:
            states[name] = value == "on"
    return states


def _base_name(node) -> str:
    return node.target.__name__.split(".")[0] if hasattr(node.target, "__name__") else str(node.target)


def _ge_type(node) -> str:
    return "".join(part.capitalize() for part in _base_name(node).split("_") if part)


def _pointwise(node) -> bool:
    return _converted(node) and torch.Tag.pointwise in getattr(node.target, "tags", ())


def _plan(fx_gm, states) -> tuple[list[_GeNode], list[_GeNode], dict]:
    """All GE ops in execution order, the same after UB fusion of element-wise chains, and
    how often each rule fired."""
    counts: dict[str, int] = {}
    ops: list[_GeNode] = []
    fired: dict[str, int] = {}

    def new_name(op_type):
        n = counts.get(op_type, 0)
        counts[op_type] = n + 1
        return op_type if n == 0 else f"{op_type}_{n}"

    for node in fx_gm.graph.nodes:
        if node.op == "placeholder":
            ops.append(_GeNode(node.name, "Data", [node]))
        elif _converted(node):
            op = _GeNode(new_name(_ge_type(node)), _ge_type(node), [node])
            for rule, base in _GRAPH_RULES.items():
                if states[rule] and _base_name(node) == base:
                    op.rules.append(rule)
                    fired[rule] = fired.get(rule, 0) + 1
            ops.append(op)
    fused: list[_GeNode] = []
    for op in ops:
        prev = fused[-1] if fused else None
        node = op.fx[0]
        if (
            states[_UB_RULE]
            and prev is not None
            and _pointwise(node)
            and _pointwise(prev.fx[-1])
            and prev.fx[-1] in node.all_input_nodes
            and len(prev.fx[-1].users) == 1
        ):
            if len(prev.fx) == 1:
                fired[_UB_RULE] = fired.get(_UB_RULE, 0) + 1
            prev.fx.append(node)
            prev.parts = (prev.parts or [prev.name]) + [op.name]
            continue
        op = _GeNode(op.name, op.op_type, list(op.fx), list(op.rules))
        fused.append(op)
    for op in fused:
        if len(op.fx) > 1:
            op.name = "".join(op.parts)
            op.op_type = "AutomaticBufferFusionOp"
            op.rules.append(_UB_RULE)
    return ops, fused, fired


def _meta(node):
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else (val,)
    return [(_SHORT_BY_TORCH.get(str(v.dtype), "fp32"), tuple(v.shape)) for v in vals if isinstance(v, torch.Tensor)]


def _write_graph_txt(config, graph_id, ops, fx_gm) -> None:
    if config.debug.graph_dump.type.value != "txt":
        return
    ge_name = {op.fx[0]: op.name for op in ops}
    graph_ops = []
    for op in ops:
        node = op.fx[0]
        inputs = []
        for arg in node.all_input_nodes:
            if arg.op == "call_function" and not _converted(arg):  # getitem: output i of its source
                inputs.append(f"{ge_name[arg.args[0]]}:{arg.args[1]}")
            elif arg in ge_name:
                inputs.append(f"{ge_name[arg]}:0")
        links = (
            [None] * len(_meta(node))
            if op.op_type == "Data"
            else [f"{node.name}-{node.target}.OUTPUT.{k}" for k in range(len(_meta(node)))]
        )
        graph_ops.append(
            GraphOp(
                op.name,
                op.op_type,
                inputs,
                [m for a in node.all_input_nodes for m in _meta(a)[:1]],
                [(d, s, "ND", link) for (d, s), link in zip(_meta(node), links)],
            )
        )
    directory = Path(config.debug.graph_dump._path.value)
    name = (
        f"dynamo_original_graph_{graph_id}_rank_{int(os.environ.get('RANK', '0'))}"
        f"_pid_{os.getpid()}_ts_{_timestamp20()}.txt"
    )
    write_graph_txt(directory / name, f"graph_{graph_id}", graph_ops)


def _write_fusion_result(config, graph_id, fired) -> None:
    if config.ge_config.export_compile_stat.value == "0":
        return
    directory = Path.cwd()
    if os.environ.get("ASCEND_WORK_PATH"):
        directory = Path(os.environ["ASCEND_WORK_PATH"]) / "FE" / str(os.getpid())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "fusion_result.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    counts = lambda n: {"effect_times": str(n), "match_times": str(n)}  # noqa: E731
    result[f"session_and_graph_id_0_{graph_id}"] = {
        "graph_fusion": {r: counts(n) for r, n in fired.items() if r != _UB_RULE},
        "ub_fusion": {r: {**counts(n), "repository_hit_times": "0"} for r, n in fired.items() if r == _UB_RULE},
    }
    path.write_text(json.dumps(result, indent=1))


def _defects() -> dict[str, float]:
    spec = os.environ.get("FAKE_TORCHAIR_DEFECT", "")
    pairs = (item.split("=") for item in spec.split(",") if item)
    return {rule: float(scale) for rule, scale in pairs}


def _dump_steps(text) -> set[int] | None:
    if not text:
        return None
    steps = set()
    for part in text.split("|"):
        low, _, high = part.partition("-")
        steps.update(range(int(low), int(high or low) + 1))
    return steps


def _ge_tensor(value) -> GeTensor | None:
    if not isinstance(value, torch.Tensor):
        return None
    short = _SHORT_BY_TORCH.get(str(value.dtype))
    if short is None:
        return None
    host = value.detach().cpu()
    values = host.double().numpy() if host.is_floating_point() else host.numpy()
    return GeTensor(values=values, dtype=short)


def _ge_compiler(config, graph_id: int):
    states = _rule_states(config)
    defects = {rule: scale for rule, scale in _defects().items() if states.get(rule)}

    def compiler(fx_gm, _inputs):
        ops, fused, fired = _plan(fx_gm, states)
        _write_graph_txt(config, graph_id, ops, fx_gm)
        _write_fusion_result(config, graph_id, fired)
        scaled = {
            node: 1.0 + scale
            for op in fused
            for rule, scale in defects.items()
            if rule in op.rules
            for node in op.fx[-1:]
        }
        tokens = itertools.count()

        class Runner(torch.fx.Interpreter):
            def run_node(self, node):
                out = super().run_node(node)
                if node in scaled and isinstance(out, torch.Tensor):
                    out = out * scaled[node]
                if _converted(node):
                    args, _ = self.fetch_args_kwargs_from_env(node)
                    self.seen[node] = (args, out)
                return out

        def run(args):
            runner = Runner(fx_gm)
            runner.seen = {}
            out = runner.boxed_run(args)
            token = next(tokens)
            if config.dump_config.enable_dump.value:
                _write_ge_dump(config, graph_id, token, fused, runner.seen)
            return out

        run._boxed_call = True
        return run

    return compiler


def _write_ge_dump(config, graph_id, token, fused, seen) -> None:
    dump = config.dump_config
    steps = _dump_steps(dump.dump_step.value)
    if steps is not None and token not in steps:
        return
    layers = set((dump.dump_layer.value or "").split()) or None
    mode = dump.dump_mode.value
    directory = Path(dump.dump_path.value) / _rank_dir() / _dump_stamp / "0" / f"graph_{graph_id}" / "1" / str(token)
    stamp = int(time.time() * 1e6)
    for order, op in enumerate(op for op in fused if op.op_type != "Data"):
        if layers is not None and op.name not in layers:
            continue
        first_args, _ = seen[op.fx[0]]
        _, last_out = seen[op.fx[-1]]
        inputs = [t for t in map(_ge_tensor, first_args) if t is not None] if mode != "output" else []
        outputs = []
        if mode != "input":
            for k, value in enumerate(last_out if isinstance(last_out, (list, tuple)) else (last_out,)):
                tensor = _ge_tensor(value)
                if tensor is not None:
                    if len(op.fx) > 1:
                        tensor.original_op = op.parts[-1]
                        tensor.original_output_index = k
                    outputs.append(tensor)
        write_ge_dump(directory, GeOp(op.op_type, op.name, inputs, outputs, task_id=order + 1, timestamp=stamp + order))
