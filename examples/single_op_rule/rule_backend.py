"""A torch.compile backend built on Inductor whose named fusion rules rewrite single nodes, as
GE's GELU and LayerNorm fusion passes do: a rule recognises its op however the graph spells it
(`F.gelu` in the model's Dynamo graph, `torch.ops.aten.gelu.default` in a one-op graph), so it
fires even when the op is alone in its graph. Rules are switched by a TorchAir-format fusion
switch file ($DIAGNOSE_FUSION_SWITCH_FILE); what fired is written to ./fusion_result.json in
GE's format (both as examples/mock_ge.py mocks them). GeluFusionPass is planted wrong
(README.md).

    spec: {"backend": "rule_backend:backend"} with examples/single_op_rule on sys.path
"""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where mock_ge.py is
import mock_ge  # noqa: E402

aten = torch.ops.aten


# --- the fused kernels ---------------------------------------------------------------------
def fast_gelu(x, *args, **kwargs):
    """GE's FastGelu, x*sigmoid(1.702x), for every GELU: the planted defect (up to ~0.02 from
    the erf GELU the model asks for)."""
    return x * torch.sigmoid(1.702 * x)


def layer_norm_kernel(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return F.layer_norm(x, normalized_shape, weight, bias, eps)


def native_layer_norm_kernel(x, normalized_shape, weight, bias, eps):
    """Output, mean and 1/std, as the ATen op returns them."""
    return aten.native_layer_norm.default(x, normalized_shape, weight, bias, eps)


def eltwise_kernel(target: Callable) -> Callable:
    """The UB-fused form of an elementwise node: the same arithmetic (UB fusion keeps
    intermediates in the unified buffer; it does not change the computation)."""

    def tbe_eltwise(*args, **kwargs):
        return target(*args, **kwargs)

    return tbe_eltwise


@dataclass(frozen=True)
class Rule:
    name: str
    group: str  # GraphFusion | UBFusion
    rewrite: Callable  # node target -> fused target, or None when the rule does not apply


GELUS = (torch._C._nn.gelu, F.gelu, aten.gelu.default)
LAYER_NORMS = {F.layer_norm: layer_norm_kernel, aten.native_layer_norm.default: native_layer_norm_kernel}
ELTWISE = (*GELUS, fast_gelu, operator.add, torch.add, aten.add.Tensor)

RULES = (
    Rule("GeluFusionPass", "GraphFusion", lambda target: fast_gelu if target in GELUS else None),
    Rule("LayerNormFusionPass", "GraphFusion", LAYER_NORMS.get),
    Rule("TbeEltwiseFusionPass", "UBFusion", lambda target: eltwise_kernel(target) if target in ELTWISE else None),
)


def fuse(gm: torch.fx.GraphModule, switches: dict) -> dict:
    """Applies the enabled rules in order; returns {group key: {rule: counts}}."""
    matched = []
    for rule in RULES:
        if not mock_ge.rule_enabled(rule, switches):
            continue
        rewritten = 0
        for node in gm.graph.nodes:
            fused = rule.rewrite(node.target) if node.op == "call_function" else None
            if fused is not None:
                node.target = fused
                rewritten += 1
        if rewritten:
            matched.append((rule, rewritten, rewritten))
    gm.recompile()
    return mock_ge.graph_result(matched)


fusion_report = mock_ge.FusionReport()  # every graph of this process


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    fusion_report.add(fuse(gm, mock_ge.switches_from_environment()))
    return compile_fx(gm, example_inputs)
