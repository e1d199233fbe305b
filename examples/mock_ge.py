"""What the example backends mock of Ascend's graph engine (GE), written once: the TorchAir-format
fusion switch file that turns fusion rules on and off ($DIAGNOSE_FUSION_SWITCH_FILE, as the
plugin sets it), ./fusion_result.json, GE's record of the rules that fired in each graph, and
GE's pattern fusion passes written as FX pattern rewrites (the patterns, as the models write
them, and their right fused forms). Each example backend builds its rules on these and plants
its own defect; the models of fusion_rules and precision_loss take their hand-written LayerNorm
layer from here too (ManualLayerNorm).

A backend finds this file by putting examples/ on sys.path: it is imported from the model's
script, from the plugin's helper processes and from a standalone repro.py alike.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch.fx.passes.utils.matcher_utils import SubgraphMatcher
from torch.fx.subgraph_rewriter import replace_pattern_with_filters

SWITCH_FILE_ENV = "DIAGNOSE_FUSION_SWITCH_FILE"
RESULT_FILE = "fusion_result.json"
GROUPS = {"GraphFusion": "graph_fusion", "UBFusion": "ub_fusion"}
SQRT_HALF = 0.7071067811865476
LAYER_NORM_EPS = 1e-5


class FusionConfigError(ValueError):
    pass


# --- the fusion switch file --------------------------------------------------------------------
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


def switches_from_environment() -> dict[str, dict[str, str]]:
    return read_switches(os.environ.get(SWITCH_FILE_ENV))


def rule_enabled(rule, switches: dict) -> bool:
    """A rule (with `name` and `group`) is on unless its entry, or its group's ALL, says off."""
    entries = switches.get(rule.group, {})
    return entries.get(rule.name, entries.get("ALL", "on")) == "on"


# --- fusion_result.json ------------------------------------------------------------------------
def graph_result(fired) -> dict:
    """One graph's entry, {group key: {rule: {"match_times", "effect_times"}}}, from
    (rule, match_times, effect_times) for each rule that matched."""
    result: dict[str, dict] = {key: {} for key in GROUPS.values()}
    for rule, match_times, effect_times in fired:
        result[GROUPS[rule.group]][rule.name] = {"match_times": str(match_times), "effect_times": str(effect_times)}
    return result


class FusionReport:
    """./fusion_result.json: every graph this process compiled, in order, the file rewritten
    whole (through a temporary file) after each."""

    def __init__(self):
        self.graphs: dict[str, dict] = {}

    def add(self, graph: dict) -> None:
        self.graphs[f"session_and_graph_id_0_{len(self.graphs)}"] = graph
        path = Path.cwd() / RESULT_FILE
        tmp = path.with_name(RESULT_FILE + ".tmp")
        tmp.write_text(json.dumps(self.graphs, indent=1))
        os.replace(tmp, path)


# --- pattern fusion: the patterns as the models write them (the Dynamo graph keeps that form) --
def matmul_bias_add(x, w, b):
    return x @ w + b


def erf_gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x * SQRT_HALF))


def manual_layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LAYER_NORM_EPS) * gamma + beta


class ManualLayerNorm(torch.nn.Module):
    """A LayerNorm layer written out op by op (manual_layer_norm), with its scale and shift."""

    def __init__(self, dim):
        super().__init__()
        self.gamma = torch.nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.beta = torch.nn.Parameter(0.1 * torch.randn(dim))

    def forward(self, x):
        return manual_layer_norm(x, self.gamma, self.beta)


def manual_softmax(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


# --- ... and their right fused forms -----------------------------------------------------------
def fused_matmul_bias_add(x, w, b):
    return torch.addmm(b, x, w)


def fused_gelu(x):
    return F.gelu(x)


def fused_layer_norm(x, gamma, beta):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, LAYER_NORM_EPS)


def fused_softmax(x):
    return torch.softmax(x, -1)


@dataclass(frozen=True)
class PatternRule:
    name: str
    group: str  # GraphFusion | UBFusion
    pattern: Callable
    fused: Callable
    faulty: Callable | None = None  # the defective fused form an example can plant in this rule
    applies: Callable | None = None  # a filter of the matches (replace_pattern_with_filters)

    def with_fault(self, faulty: Callable) -> PatternRule:
        return replace(self, faulty=faulty)


def two_dimensional(match, original_graph, pattern_graph) -> bool:
    """addmm takes a 2-D left operand: a 3-D matmul is matched but not rewritten."""
    x = match.placeholder_nodes[0]
    value = x.meta.get("example_value") if isinstance(x, torch.fx.Node) else None
    return value is not None and value.dim() == 2


# GE's pattern fusion rules, as the examples' backends apply them (each plants its own fault)
MATMUL_BIAS_ADD = PatternRule(
    "MatMulBiasAddFusionPass", "GraphFusion", matmul_bias_add, fused_matmul_bias_add, applies=two_dimensional
)
GELU = PatternRule("GeluFusionPass", "GraphFusion", erf_gelu, fused_gelu)
LAYER_NORM = PatternRule("LayerNormFusionPass", "GraphFusion", manual_layer_norm, fused_layer_norm)
SOFTMAX = PatternRule("SoftmaxFusionPass", "GraphFusion", manual_softmax, fused_softmax)


def _replacement(fn: Callable, pattern: Callable) -> torch.fx.GraphModule:
    """One node calling the fused function: the graph Inductor sees holds it as a unit."""
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(name) for name in inspect.signature(pattern).parameters]
    graph.output(graph.call_function(fn, tuple(inputs)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def rewrite(gm: torch.fx.GraphModule, pattern: Callable, fused: Callable, applies: Callable | None = None):
    """Rewrites every match of `pattern` (that `applies` accepts) into one call of `fused`;
    returns (match_times, effect_times)."""
    matches = SubgraphMatcher(torch.fx.symbolic_trace(pattern).graph, ignore_literals=False).match(gm.graph)
    if not matches:
        return 0, 0
    replaced = replace_pattern_with_filters(gm, pattern, _replacement(fused, pattern), [applies] if applies else None)
    for match in replaced:
        # The fused node computes what the matched output did: it gets that node's example value
        # and fake tensor, which Inductor's pre-grad passes read (torch 2.5 fails without them).
        matched_output = match.nodes_map[match.anchor]
        for node in match.replacements:
            for key in ("example_value", "val", "tensor_meta"):
                if key in matched_output.meta and key not in node.meta:
                    node.meta[key] = matched_output.meta[key]
    return len(matches), len(replaced)
