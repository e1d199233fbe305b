"""GE on the CPU: the global options of InitializeGraphEngine, the dump configuration torchair
hands to ACL (AclmdlSetDump), and per graph: load (the serialized ModelDef), compile (fusion
rules, fusion_result.json) and run (the fused graph interpreted op by op; GE dump binaries in
GE's layout, or with dump_data "stats" GE's statistics file of each op in their place)."""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from fixtures.dtypes import DTYPES
from fixtures.ge_dump import GeOp, GeTensor, write_ge_dump, write_ge_stats

from . import fusion
from .ge_ops import const_value, proto_dtype

_SHORT_BY_TORCH = {d.torch_name: d.short for d in DTYPES.values()}
_NOT_DUMPED = {"Data", "Const", "NetOutput"}  # no task of their own on the device


class _Engine:
    options: dict | None = None
    dump: dict | None = None
    compiled_graphs = 0
    dump_stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d%H%M%S")


def initialize(options: dict) -> None:
    if _Engine.options is None:
        _Engine.options = options


def finalize() -> None:
    pass


def set_dump_config(path: str) -> None:
    with open(path) as f:
        _Engine.dump = json.load(f).get("dump")


def _producer(text: str):
    if text == "":
        return None  # an optional input left empty
    name, _, index = text.rpartition(":")
    return (name, int(index)) if name and index.lstrip("-").isdigit() else (text, 0)


class Graph:
    def __init__(self, name: str):
        self.name = name
        self.graph = None
        self.nodes: list[fusion.Node] | None = None
        self.steps = 0

    def load(self, serialized: bytes, options: dict) -> None:
        from torchair._ge_concrete_graph.ge_ir_pb2 import ModelDef

        model = ModelDef()
        model.ParseFromString(serialized)
        self.graph = model.graph[0]

    def compile(self) -> None:
        if self.nodes is not None:
            return
        nodes, shapes = [], {}
        for op in self.graph.op:
            inputs = [_producer(t) for t in op.input]
            inputs = [i for i in inputs if i is None or i[1] >= 0]  # control edges order only
            nodes.append(fusion.Node(op.name, op.type, op, inputs))
            shapes[op.name] = [list(d.shape.dim) for d in op.output_desc]
        graph = fusion.Graph(nodes, shapes)
        fired = fusion.fuse(graph, _Engine.options or {})
        self.nodes = graph.nodes
        self.graph_id = _Engine.compiled_graphs
        _Engine.compiled_graphs += 1
        if (_Engine.options or {}).get("ge.exportCompileStat", "2") != "0":
            _write_fusion_result(self.graph_id, fusion.fusion_result_entry(fired))

    def run(self, inputs: list, assigned_outputs: list) -> list:
        self.compile()
        env, outputs, executed = {}, [], []
        for node in self.nodes:
            values = [None if i is None else env[i] for i in node.inputs]
            if node.type == "Data":
                result = [inputs[node.op.attr["index"].i]]
            elif node.type == "Const":
                result = [const_value(node.op)]
            elif node.type == "NetOutput":
                outputs = values
                continue
            else:
                result = node.run(values)
                executed.append((node, values, result))
            env.update({(node.name, k): v for k, v in enumerate(result)})
        self._dump(executed)
        self.steps += 1
        for k, target in enumerate(assigned_outputs):
            if target is not None:
                target.copy_(outputs[k])
                outputs[k] = target
        return outputs

    def _dump(self, executed) -> None:
        config = _Engine.dump
        if not config or not _dumps_step(config.get("dump_step", ""), self.steps):
            return
        write = write_ge_stats if config.get("dump_data") == "stats" else write_ge_dump
        layers = None
        for entry in config.get("dump_list", []):
            if entry.get("model_name") == self.graph.name and entry.get("layer"):
                layers = set(entry["layer"])
        mode = config.get("dump_mode", "all")
        # {dump_path}/{time}/{device}/{model_name}/{model_id}/{step}
        model = Path(config["dump_path"]) / _Engine.dump_stamp / "0" / self.graph.name
        directory = model / str(self.graph_id + 1) / str(self.steps)
        stamp = int(time.time() * 1e6)
        for task, (node, values, result) in enumerate(executed):
            if node.type in _NOT_DUMPED or (layers is not None and not layers & {node.name, *node.originals}):
                continue
            ins = [_ge_tensor(v) for v in values if v is not None] if mode != "output" else []
            outs = [_ge_tensor(v) for v in result] if mode != "input" else []
            if node.originals:
                for k, out in enumerate(outs):
                    out.original_op, out.original_output_index = node.originals[-1], k
            op = GeOp(node.type, node.name, ins, outs, task_id=task + 1, timestamp=stamp + task)
            write(directory, op)


def _dumps_step(text: str, step: int) -> bool:
    if not text:
        return True
    for part in text.split("|"):
        low, _, high = part.partition("-")
        if int(low) <= step <= int(high or low):
            return True
    return False


def _ge_tensor(value: torch.Tensor) -> GeTensor:
    host = value.detach().cpu()
    values = host.double().numpy() if host.is_floating_point() else host.numpy()
    return GeTensor(values=np.ascontiguousarray(values), dtype=_SHORT_BY_TORCH[str(host.dtype)])


def _write_fusion_result(graph_id: int, entry: dict) -> None:
    directory = Path.cwd()
    if os.environ.get("ASCEND_WORK_PATH"):
        directory = Path(os.environ["ASCEND_WORK_PATH"]) / "FE" / str(os.getpid())
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "fusion_result.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    result[f"session_and_graph_id_0_{graph_id}"] = entry
    path.write_text(json.dumps(result, indent=1))


__all__ = ["Graph", "finalize", "initialize", "proto_dtype", "set_dump_config"]
