"""An example torch.compile backend that is not Inductor, in the manner of a vendor's graph
compiler: it executes the FX graph it receives with its own kernels (torch.fx.Interpreter),
exposes only the final outputs (no per-op dump), applies two switchable fusion rules
(TorchAir-format switch file at $DIAGNOSE_FUSION_SWITCH_FILE, ./fusion_result.json in GE's
format, as examples/mock_ge.py mocks them), and selects a fused multiply-add kernel, always,
for a mul whose only user is an add of the same graph: that kernel is planted wrong (see
README.md).

    torch.compile(model, backend=vendor_backend.backend)
    spec: {"backend": "vendor_backend:backend"} with examples/graph_only_defect on sys.path
"""

from __future__ import annotations

import operator
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where mock_ge.py is
import mock_ge  # noqa: E402

MUL = {operator.mul, torch.mul, torch.ops.aten.mul.Tensor}
ADD = {operator.add, torch.add, torch.ops.aten.add.Tensor}
LINEAR = {torch._C._nn.linear, F.linear, torch.ops.aten.linear.default}
RELU = {torch.relu, F.relu, torch.ops.aten.relu.default}
TANH = {torch.tanh, torch.ops.aten.tanh.default}


# --- fused kernels: (the producer's arguments, the consumer's other arguments) -> the value --
def linear_relu(producer_args, others):
    return torch.clamp_min(F.linear(*producer_args), 0)


def tanh_linear(producer_args, others):
    return F.linear(torch.tanh(*producer_args), *others)


def fused_mul_add(producer_args, others):
    """The planted defect: the product is rounded to bfloat16 before the addend is added."""
    product = torch.mul(*producer_args)
    return product.to(torch.bfloat16).to(product.dtype) + others[0]


@dataclass(frozen=True)
class Fusion:
    name: str
    group: str  # GraphFusion | UBFusion
    producer: set
    consumer: set
    kernel: Callable


RULES = (
    Fusion("MatMulReluFusionPass", "GraphFusion", LINEAR, RELU, linear_relu),
    Fusion("TbeTanhMatMulFusionPass", "UBFusion", TANH, LINEAR, tanh_linear),
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}
MUL_ADD = Fusion("FusedMulAdd", "", MUL, ADD, fused_mul_add)  # kernel selection: no rule, no switch


def _is(node: torch.fx.Node, targets: set) -> bool:
    return node.op == "call_function" and node.target in targets


def fusions(gm: torch.fx.GraphModule, rules) -> dict[torch.fx.Node, tuple[Fusion, torch.fx.Node]]:
    """Consumer node -> (fusion, producer): a producer whose only user is the consumer."""
    fused = {}
    for node in gm.graph.nodes:
        for rule in rules:
            if node not in fused and _is(node, rule.producer) and len(node.users) == 1:
                consumer = next(iter(node.users))
                if _is(consumer, rule.consumer) and consumer not in fused:
                    fused[consumer] = (rule, node)
    return fused


class VendorExecutor(torch.fx.Interpreter):
    """Runs every node with PyTorch's kernel, except the consumers of fused pairs."""

    def __init__(self, gm: torch.fx.GraphModule, fused: dict):
        super().__init__(gm, garbage_collect_values=False)  # a fused kernel reads its producer's inputs
        self.fused = fused

    def run_node(self, node: torch.fx.Node):
        if node not in self.fused:
            return super().run_node(node)
        rule, producer = self.fused[node]
        producer_args, _ = self.fetch_args_kwargs_from_env(producer)
        consumer_args, _ = self.fetch_args_kwargs_from_env(node)
        others = tuple(value for arg, value in zip(node.args, consumer_args) if arg is not producer)
        return rule.kernel(producer_args, others)


fusion_report = mock_ge.FusionReport()  # every graph of this process


def backend(gm: torch.fx.GraphModule, example_inputs):
    switches = mock_ge.switches_from_environment()
    fused = fusions(gm, [rule for rule in RULES if mock_ge.rule_enabled(rule, switches)] + [MUL_ADD])
    fired = Counter(rule.name for rule, _ in fused.values() if rule.group)
    fusion_report.add(mock_ge.graph_result((RULES_BY_NAME[name], count, count) for name, count in fired.items()))
    executor = VendorExecutor(gm, fused)
    return lambda *args: executor.run(*args)
