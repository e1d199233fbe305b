"""A torch.compile backend with named, switchable fusion rules, built like
examples/fusion_rules/fusion_backend.py (the switch file and fusion_result.json of
examples/mock_ge.py), whose one planted rule loses precision quietly instead of computing a
different function: the fused softmax runs in float16 inside a float32 model, what a precision
mode that lowers fp32 to fp16 does. `$EXAMPLE_PLANT=tanh_gelu` plants the other quiet loss instead: the fused GELU is
the tanh approximation of the exact (erf) GELU. The rewritten graph goes to Inductor.

    torch.compile(model, backend=precision_backend.backend)
    spec: {"backend": "precision_backend:backend"} with examples/precision_loss on sys.path
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where mock_ge.py is
import mock_ge  # noqa: E402

PLANT_ENV = "EXAMPLE_PLANT"
PLANTS = {"softmax_fp16": "SoftmaxFusionPass", "tanh_gelu": "GeluFusionPass", "none": None}
DEFAULT_PLANT = "softmax_fp16"


def residual_add(x, y):
    return x + y


# --- the fused forms besides GE's, and the planted ones ---------------------------------------
def fused_add(x, y):
    return torch.add(x, y)


@torch.library.custom_op("precision_loss::softmax_fp16", mutates_args=())
def softmax_fp16(x: torch.Tensor) -> torch.Tensor:
    """Planted: a softmax kernel that computes in float16 (input and output rounded to float16)
    inside a float32 graph. An opaque kernel, as GE's fused op is: written with casts in the
    graph instead, Inductor would drop the fp32->fp16->fp32 cast pairs and compute in fp32."""
    return torch.softmax(x.to(torch.float16), -1).to(x.dtype)


@softmax_fp16.register_fake
def _(x):
    return torch.empty_like(x)


softmax_fp16_kernel = torch.ops.precision_loss.softmax_fp16.default  # the node target


def tanh_gelu(x):
    """Planted (EXAMPLE_PLANT=tanh_gelu): the tanh approximation in place of the exact GELU."""
    return F.gelu(x, approximate="tanh")


def _two_tensors(match, original_graph, pattern_graph) -> bool:
    """An element-wise add of two graph values (the residual adds), not `1.0 + x`."""
    return all(isinstance(x, torch.fx.Node) for x in match.placeholder_nodes)


RULES = (
    mock_ge.MATMUL_BIAS_ADD,
    mock_ge.LAYER_NORM,
    mock_ge.SOFTMAX.with_fault(softmax_fp16_kernel),
    mock_ge.GELU.with_fault(tanh_gelu),
    mock_ge.PatternRule("TbeEltwiseAddFusionPass", "UBFusion", residual_add, fused_add, applies=_two_tensors),
)


def planted_rule(plant: str | None) -> str | None:
    """The rule whose fused form is the planted one: `$EXAMPLE_PLANT` unset is softmax_fp16."""
    plant = plant or DEFAULT_PLANT
    if plant not in PLANTS:
        raise mock_ge.FusionConfigError(f"{PLANT_ENV}: unknown plant {plant!r} (expected {', '.join(PLANTS)})")
    return PLANTS[plant]


def fuse(gm: torch.fx.GraphModule, switches: dict, plant: str | None = None) -> dict:
    """Applies the enabled rules in order (the planted one in its planted form); returns
    {group key: {rule: {"match_times", "effect_times"}}} for the rules that matched."""
    planted = planted_rule(plant)
    matched = []
    for rule in RULES:
        if not mock_ge.rule_enabled(rule, switches):
            continue
        fused = rule.faulty if rule.name == planted else rule.fused
        match_times, effect_times = mock_ge.rewrite(gm, rule.pattern, fused, rule.applies)
        if match_times:
            matched.append((rule, match_times, effect_times))
    gm.graph.lint()
    gm.recompile()
    return mock_ge.graph_result(matched)


fusion_report = mock_ge.FusionReport()  # every graph of this process


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    fusion_report.add(fuse(gm, mock_ge.switches_from_environment(), os.environ.get(PLANT_ENV)))
    return compile_fx(gm, example_inputs)
