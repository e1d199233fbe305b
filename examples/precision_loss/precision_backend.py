"""A torch.compile backend with named, switchable fusion rules, built like
examples/fusion_rules/fusion_backend.py (same switch file, same fusion_result.json), whose one
planted rule loses precision quietly instead of computing a different function: the fused
softmax runs in float16 inside a float32 model, what a precision mode that lowers fp32 to
fp16 does. `$EXAMPLE_PLANT=tanh_gelu` plants the other quiet loss instead: the fused GELU is
the tanh approximation of the exact (erf) GELU. The rewritten graph goes to Inductor.

    torch.compile(model, backend=precision_backend.backend)
    spec: {"backend": "precision_backend:backend"} with examples/precision_loss on sys.path
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch.fx.passes.utils.matcher_utils import SubgraphMatcher
from torch.fx.subgraph_rewriter import replace_pattern_with_filters

SWITCH_FILE_ENV = "DIAGNOSE_FUSION_SWITCH_FILE"
PLANT_ENV = "EXAMPLE_PLANT"
PLANTS = {"softmax_fp16": "SoftmaxFusionPass", "tanh_gelu": "GeluFusionPass", "none": None}
DEFAULT_PLANT = "softmax_fp16"
RESULT_FILE = "fusion_result.json"
GROUPS = {"GraphFusion": "graph_fusion", "UBFusion": "ub_fusion"}
SQRT_HALF = 0.7071067811865476
LAYER_NORM_EPS = 1e-5


# --- the patterns, written as the model writes them (the Dynamo graph keeps that form) -----
def matmul_bias_add(x, w, b):
    return x @ w + b


def residual_add(x, y):
    return x + y


def manual_layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LAYER_NORM_EPS) * gamma + beta


def manual_softmax(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def erf_gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x * SQRT_HALF))


# --- the fused forms, and the planted ones -----------------------------------------------------
def fused_matmul_bias_add(x, w, b):
    return torch.addmm(b, x, w)


def fused_add(x, y):
    return torch.add(x, y)


def fused_layer_norm(x, gamma, beta):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, LAYER_NORM_EPS)


def fused_softmax(x):
    return torch.softmax(x, -1)


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


def fused_gelu(x):
    return F.gelu(x)


def tanh_gelu(x):
    """Planted (EXAMPLE_PLANT=tanh_gelu): the tanh approximation in place of the exact GELU."""
    return F.gelu(x, approximate="tanh")


def _two_dimensional(match, original_graph, pattern_graph) -> bool:
    """addmm takes a 2-D left operand: a 3-D matmul is matched but not rewritten."""
    x = match.placeholder_nodes[0]
    value = x.meta.get("example_value") if isinstance(x, torch.fx.Node) else None
    return value is not None and value.dim() == 2


def _two_tensors(match, original_graph, pattern_graph) -> bool:
    """An element-wise add of two graph values (the residual adds), not `1.0 + x`."""
    return all(isinstance(x, torch.fx.Node) for x in match.placeholder_nodes)


@dataclass(frozen=True)
class Rule:
    name: str
    group: str  # GraphFusion | UBFusion
    pattern: Callable
    fused: Callable
    planted: Callable | None = None  # the fused form when this rule is the planted one
    applies: Callable | None = None


RULES = (
    Rule("MatMulBiasAddFusionPass", "GraphFusion", matmul_bias_add, fused_matmul_bias_add, applies=_two_dimensional),
    Rule("LayerNormFusionPass", "GraphFusion", manual_layer_norm, fused_layer_norm),
    Rule("SoftmaxFusionPass", "GraphFusion", manual_softmax, fused_softmax, softmax_fp16_kernel),
    Rule("GeluFusionPass", "GraphFusion", erf_gelu, fused_gelu, tanh_gelu),
    Rule("TbeEltwiseAddFusionPass", "UBFusion", residual_add, fused_add, applies=_two_tensors),
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


class FusionConfigError(ValueError):
    pass


# --- switches and the plant ----------------------------------------------------------------------
def read_switches(path: str | None) -> dict[str, dict[str, str]]:
    """{group: {"ALL" or rule: "on"|"off"}} from a TorchAir fusion switch file."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise FusionConfigError(f"fusion switch file {path}: {e}") from None
    switch = data.get("Switch") if isinstance(data, dict) else None
    if not isinstance(switch, dict):
        raise FusionConfigError(f'fusion switch file {path}: expected {{"Switch": {{...}}}}')
    for group, entries in switch.items():
        if group not in GROUPS:
            raise FusionConfigError(
                f"fusion switch file {path}: unknown group {group!r} (expected {', '.join(GROUPS)})"
            )
        if not isinstance(entries, dict) or any(v not in ("on", "off") for v in entries.values()):
            raise FusionConfigError(f'fusion switch file {path}: {group} must map rule names to "on" or "off"')
    return switch


def rule_enabled(rule: Rule, switches: dict) -> bool:
    entries = switches.get(rule.group, {})
    return entries.get(rule.name, entries.get("ALL", "on")) == "on"


def planted_rule(plant: str | None) -> str | None:
    """The rule whose fused form is the planted one: `$EXAMPLE_PLANT` unset is softmax_fp16."""
    plant = plant or DEFAULT_PLANT
    if plant not in PLANTS:
        raise FusionConfigError(f"{PLANT_ENV}: unknown plant {plant!r} (expected {', '.join(PLANTS)})")
    return PLANTS[plant]


# --- the rewrite -------------------------------------------------------------------------------
def _replacement(fn: Callable, pattern: Callable) -> torch.fx.GraphModule:
    """One node calling the fused function: the graph Inductor sees holds it as a unit."""
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(name) for name in inspect.signature(pattern).parameters]
    graph.output(graph.call_function(fn, tuple(inputs)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def apply_rule(gm: torch.fx.GraphModule, rule: Rule, fused: Callable) -> tuple[int, int]:
    """Rewrites every match of the rule into `fused`; returns (match_times, effect_times)."""
    pattern = torch.fx.symbolic_trace(rule.pattern).graph
    matches = SubgraphMatcher(pattern, ignore_literals=False).match(gm.graph)
    if not matches:
        return 0, 0
    filters = [rule.applies] if rule.applies else None
    replaced = replace_pattern_with_filters(gm, rule.pattern, _replacement(fused, rule.pattern), filters)
    return len(matches), len(replaced)


def fuse(gm: torch.fx.GraphModule, switches: dict, plant: str | None = None) -> dict:
    """Applies the enabled rules in order (the planted one in its planted form); returns
    {group key: {rule: {"match_times", "effect_times"}}} for the rules that matched."""
    planted = planted_rule(plant)
    result: dict[str, dict] = {key: {} for key in GROUPS.values()}
    for rule in RULES:
        if not rule_enabled(rule, switches):
            continue
        fused = rule.planted if rule.name == planted else rule.fused
        match_times, effect_times = apply_rule(gm, rule, fused)
        if match_times:
            result[GROUPS[rule.group]][rule.name] = {
                "match_times": str(match_times),
                "effect_times": str(effect_times),
            }
    gm.graph.lint()
    gm.recompile()
    return result


# --- fusion_result.json: every graph of this process -----------------------------------------
_results: dict[str, dict] = {}


def _write_result(graph_result: dict) -> None:
    _results[f"session_and_graph_id_0_{len(_results)}"] = graph_result
    path = Path.cwd() / RESULT_FILE
    tmp = path.with_name(RESULT_FILE + ".tmp")
    tmp.write_text(json.dumps(_results, indent=1))
    os.replace(tmp, path)


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    switches = read_switches(os.environ.get(SWITCH_FILE_ENV))
    _write_result(fuse(gm, switches, os.environ.get(PLANT_ENV)))
    return compile_fx(gm, example_inputs)
