"""GE's fusion rules, as the stand-in plays them: graph-fusion and UB-fusion rules under GE's
names, switched by the GE options torchair passes (ge.fusionSwitchFile, ge.oo.level,
ge.optimizationSwitch), rewriting the graph GE runs. A fused node keeps the names of the ops it
replaced (GE's `_datadump_original_op_names`) and reports them as OriginalOp in its dump.

Every rule computes what it replaced unless it is planted as faulty:
CANN_STAND_IN_FAULTS="GeluFusionPass,SoftmaxFusionPass" gives those rules their defective
fused forms, as a vendor's bug in GE would (see FAULTS)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from .ge_ops import Attrs, run_op

FAULTS_ENV = "CANN_STAND_IN_FAULTS"
FAULTS = {
    "MatMulBiasAddFusionPass": "the fused matmul + bias computed in bfloat16",
    "GeluFusionPass": "GELU fused into FastGelu, x * sigmoid(1.702 x)",
    "SoftmaxFusionPass": "softmax computed in float16",
    "LayerNormFusionPass": "layer norm with the unbiased (n - 1) variance",
    "TbeEltwiseFusionPass": "the fused element-wise chain rounds every intermediate to float16",
}
ELEMENTWISE = {
    "Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "Neg", "Exp", "Sqrt", "Rsqrt",
    "Sigmoid", "Tanh", "Relu", "Gelu", "Swish", "Pow", "Maximum", "Minimum",
}  # fmt: skip


@dataclass
class Node:
    """One op of the graph GE runs: an op of torchair's graph, or a fused op standing for several."""

    name: str
    type: str
    op: object  # the OpDef (attributes, output descs) of the op, or of the fused op's last part
    inputs: list  # (producer name, output index), or None for an empty optional input
    originals: list[str] = field(default_factory=list)  # `_datadump_original_op_names`
    compute: Callable | None = None  # fused ops: inputs -> outputs

    def run(self, values: list) -> list:
        return self.compute(values) if self.compute else run_op(self.op, values)


class FusionConfigError(ValueError):
    pass


def rule_states(options: dict) -> dict[str, bool]:
    """Which rules are on under GE's global options."""
    on = options.get("ge.oo.level", "O3") != "O1"
    states = {rule.name: on for rule in RULES}
    path = options.get("ge.fusionSwitchFile")
    if path:
        try:
            switch = json.loads(Path(path).read_text())["Switch"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise FusionConfigError(f"fusion switch file {path}: {e}") from None
        for rule in RULES:
            entries = switch.get(rule.group, {})
            value = entries.get(rule.name, entries.get("ALL"))
            if value is not None:
                states[rule.name] = value == "on"
    for item in filter(None, options.get("ge.optimizationSwitch", "").split(";")):
        name, _, value = item.partition(":")
        if name in states:
            states[name] = value == "on"
    return states


def planted_faults() -> set[str]:
    faults = {f for f in os.environ.get(FAULTS_ENV, "").split(",") if f}
    unknown = faults - set(FAULTS)
    if unknown:
        raise FusionConfigError(f"{FAULTS_ENV}: unknown rule(s) {sorted(unknown)}; known: {sorted(FAULTS)}")
    return faults


class Graph:
    """Nodes in execution order with their consumers, rewritten in place by the rules."""

    def __init__(self, nodes: list[Node], shapes: dict):
        self.nodes = nodes
        self.shapes = shapes  # op name -> output shapes from the graph's descs

    def consumers(self, name: str) -> list[Node]:
        return [n for n in self.nodes if any(i is not None and i[0] == name for i in n.inputs)]

    def only_consumer(self, node: Node) -> Node | None:
        users = self.consumers(node.name)
        return users[0] if len(users) == 1 else None

    def replace(self, parts: list[Node], fused: Node) -> None:
        """`fused` takes the place of `parts`; consumers of the last part read fused's outputs."""
        last = parts[-1].name
        at = self.nodes.index(parts[-1])
        self.nodes[at] = fused
        for part in parts[:-1]:
            self.nodes.remove(part)
        for n in self.nodes:
            n.inputs = [(fused.name, i[1]) if i is not None and i[0] == last else i for i in n.inputs]


def _originals(parts: list[Node]) -> list[str]:
    return [name for p in parts for name in (p.originals or [p.name])]


def _in_dtype(compute, dtype):
    def run(values):
        out = compute([v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values])
        return [o.to(values[0].dtype) for o in out]

    return run


def _matmul_bias_add(graph: Graph, faulty: bool) -> int:
    fired = 0
    for mm in [n for n in graph.nodes if n.type in ("MatMul", "MatMulV2") and not n.originals]:
        if len(mm.inputs) > 2 and mm.inputs[2] is not None:
            continue
        parts, scale = [mm], None
        nxt = graph.only_consumer(mm)
        if nxt is not None and nxt.type == "Mul" and graph.shapes.get(_other(nxt, mm.name)[0], [[0]])[0] == []:
            parts.append(nxt)
            scale = _other(nxt, mm.name)
            nxt = graph.only_consumer(nxt)
        if nxt is None or nxt.type not in ("Add", "AddV2"):
            continue
        bias = _other(nxt, parts[-1].name)
        if bias is None or len(graph.shapes.get(bias[0], [[]])[bias[1]]) != 1:
            continue
        parts.append(nxt)
        attrs = Attrs(mm.op)

        def compute(values, attrs=attrs, has_scale=scale is not None):
            x1, x2 = values[0], values[1]
            out = torch.matmul(x1.transpose(-1, -2) if attrs.b("transpose_x1") else x1,
                               x2.transpose(-1, -2) if attrs.b("transpose_x2") else x2)  # fmt: skip
            if has_scale:
                out = out * values[2]
            return [out + values[-1]]

        fused_inputs = mm.inputs[:2] + ([scale] if scale else []) + [bias]
        fused = Node(mm.name, mm.type, nxt.op, fused_inputs, _originals(parts))
        fused.compute = _in_dtype(compute, torch.bfloat16) if faulty else compute
        graph.replace(parts, fused)
        fired += 1
    return fired


def _other(node: Node, name: str):
    others = [i for i in node.inputs if i is not None and i[0] != name]
    return others[0] if len(others) == 1 else None


def _rewrite_each(op_type: str, fused_type: str, right, wrong, when=lambda graph, node: True):
    def rule(graph: Graph, faulty: bool) -> int:
        fired = 0
        for node in [n for n in graph.nodes if n.type == op_type and not n.originals and when(graph, n)]:
            fused = Node(node.name, fused_type, node.op, node.inputs, [node.name])
            attrs = Attrs(node.op)
            fused.compute = lambda values, a=attrs: (wrong if faulty else right)(a, *values)
            graph.replace([node], fused)
            fired += 1
        return fired

    return rule


def _fed_by_a_linear_layer(graph: Graph, node: Node) -> bool:
    """The GELU of a linear layer: fed by a matmul or a bias add, never a GELU alone in its graph."""
    producer = next((n for n in graph.nodes if node.inputs and node.inputs[0] and n.name == node.inputs[0][0]), None)
    return producer is not None and producer.type in ("MatMul", "MatMulV2", "BatchMatMul", "Add", "AddV2")


def _gelu(a, x):
    return [torch.nn.functional.gelu(x)]


def _fast_gelu(a, x):
    return [x * torch.sigmoid(1.702 * x)]


def _softmax(a, x):
    return [torch.softmax(x, a.ints("axes", [-1])[0])]


def _softmax_fp16(a, x):
    return [torch.softmax(x.half(), a.ints("axes", [-1])[0]).to(x.dtype)]


def _layer_norm(unbiased: bool):
    def compute(a, x, shape, gamma=None, beta=None):
        axes = list(range(x.dim() - shape.numel(), x.dim()))
        mean = x.mean(axes, keepdim=True)
        rstd = torch.rsqrt(x.var(axes, unbiased=unbiased, keepdim=True) + a.f("epsilon", 1e-5))
        y = (x - mean) * rstd
        y = y * gamma if gamma is not None else y
        return [y + beta if beta is not None else y, mean, rstd]

    return compute


def _eltwise_chains(graph: Graph, faulty: bool) -> int:
    """UB fusion: a chain of element-wise ops, each feeding only the next, becomes one
    AutomaticBufferFusionOp named by concatenating the names of its ops, as GE names it."""
    fired = 0
    for start in list(graph.nodes):
        if start not in graph.nodes or start.type not in ELEMENTWISE or start.originals:
            continue
        chain = [start]
        while (nxt := graph.only_consumer(chain[-1])) is not None and nxt.type in ELEMENTWISE and not nxt.originals:
            if nxt.type in ("Sub", "RealDiv", "Div", "Pow") and nxt.inputs[0][0] != chain[-1].name:
                break  # the chain flows through the first input of a non-commutative op
            chain.append(nxt)
        if len(chain) < 2:
            continue
        names = {n.name for n in chain}
        outside = []
        for n in chain:
            for i in n.inputs:
                if i is not None and i[0] not in names and i not in outside:
                    outside.append(i)

        def compute(values, chain=chain, outside=outside):
            env = dict(zip(outside, values))
            for n in chain:
                out = run_op(n.op, [None if i is None else env[i] for i in n.inputs])
                if faulty:
                    out = [o.half().to(o.dtype) if o.is_floating_point() else o for o in out]
                env.update({(n.name, k): o for k, o in enumerate(out)})
            return [env[(chain[-1].name, k)] for k in range(len(out))]

        name = "".join(n.name for n in chain)
        fused = Node(name, "AutomaticBufferFusionOp", chain[-1].op, outside, _originals(chain))
        fused.compute = compute
        graph.replace(chain, fused)
        fired += 1
    return fired


@dataclass
class Rule:
    name: str
    group: str  # GraphFusion or UBFusion, as in the switch file
    apply: Callable[[Graph, bool], int]


RULES = [
    Rule("MatMulBiasAddFusionPass", "GraphFusion", _matmul_bias_add),
    Rule(
        "GeluFusionPass",
        "GraphFusion",
        _rewrite_each("Gelu", "FastGelu", _gelu, _fast_gelu, when=_fed_by_a_linear_layer),
    ),
    Rule("SoftmaxFusionPass", "GraphFusion", _rewrite_each("SoftmaxV2", "SoftmaxV2", _softmax, _softmax_fp16)),
    Rule(
        "LayerNormFusionPass",
        "GraphFusion",
        _rewrite_each("LayerNormV4", "LayerNorm", _layer_norm(False), _layer_norm(True)),
    ),
    Rule("TbeEltwiseFusionPass", "UBFusion", _eltwise_chains),
]


def fuse(graph: Graph, options: dict) -> dict[str, int]:
    """Applies the rules that are on, in order; returns how often each fired."""
    states = rule_states(options)
    faults = planted_faults()
    fired = {}
    for rule in RULES:
        if states[rule.name]:
            count = rule.apply(graph, rule.name in faults)
            if count:
                fired[rule.name] = count
    return fired


def fusion_result_entry(fired: dict[str, int]) -> dict:
    """fusion_result.json's record of one graph, as GE writes it: counts are strings."""
    groups = {rule.name: rule.group for rule in RULES}
    entry = {"graph_fusion": {}, "ub_fusion": {}}
    for name, count in fired.items():
        counts = {"effect_times": str(count), "match_times": str(count)}
        if groups[name] == "UBFusion":
            entry["ub_fusion"][name] = {**counts, "repository_hit_times": "0"}
        else:
            entry["graph_fusion"][name] = counts
    return entry
