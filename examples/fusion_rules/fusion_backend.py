"""An example torch.compile backend built on Inductor with named, switchable fusion rules, in
the manner of GE: each rule is an FX pattern rewrite applied to the Dynamo graph before the
graph goes to Inductor (compile_fx). Rules are switched by a TorchAir-format fusion switch file
($DIAGNOSE_FUSION_SWITCH_FILE) and what fired is written to ./fusion_result.json in GE's
format. One rule is planted wrong (see README.md); $FUSION_EXAMPLE_FAULTS changes the faults.

    torch.compile(model, backend=fusion_backend.backend)
    spec: {"backend": "fusion_backend:backend"} with examples/fusion_rules on sys.path
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
FAULTS_ENV = "FUSION_EXAMPLE_FAULTS"
PLANTED_FAULTS = "wrong:GeluFusionPass"
RESULT_FILE = "fusion_result.json"
GROUPS = {"GraphFusion": "graph_fusion", "UBFusion": "ub_fusion"}
SQRT_HALF = 0.7071067811865476
LAYER_NORM_EPS = 1e-5


# --- the patterns, written as the model writes them (the Dynamo graph keeps that form) -----
def matmul_bias_add(x, w, b):
    return x @ w + b


def erf_gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x * SQRT_HALF))


def sigmoid_mul(x):
    return x * torch.sigmoid(x)


def manual_layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LAYER_NORM_EPS) * gamma + beta


def manual_softmax(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


# --- the fused forms: right, and the defective variant each rule can be faulted into --------
def fused_matmul_bias_add(x, w, b):
    return torch.addmm(b, x, w)


def fused_matmul_bias_add_bf16(x, w, b):
    """Accumulates in bfloat16."""
    return torch.addmm(b.bfloat16(), x.bfloat16(), w.bfloat16()).to(x.dtype)


def fused_gelu(x):
    return F.gelu(x)


def fast_gelu(x):
    """The sigmoid approximation x*sigmoid(1.702x): a different function (error up to ~0.02)."""
    return x * torch.sigmoid(1.702 * x)


def fused_silu(x):
    return F.silu(x)


def hard_swish(x):
    """The piecewise-linear sigmoid x*clamp(x/6+1/2, 0, 1) of fast kernels: a different function."""
    return F.hardswish(x)


def fused_layer_norm(x, gamma, beta):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, LAYER_NORM_EPS)


def layer_norm_unbiased(x, gamma, beta):
    """Normalises with the unbiased (n-1) variance."""
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + LAYER_NORM_EPS) * gamma + beta


def fused_softmax(x):
    return torch.softmax(x, -1)


def softmax_no_max_fp16(x):
    """No max subtraction, computed in float16."""
    e = torch.exp(x.half())
    return (e / e.sum(-1, keepdim=True)).to(x.dtype)


def _two_dimensional(match, original_graph, pattern_graph) -> bool:
    """addmm takes a 2-D left operand: a 3-D matmul is matched but not rewritten."""
    x = match.placeholder_nodes[0]
    value = x.meta.get("example_value") if isinstance(x, torch.fx.Node) else None
    return value is not None and value.dim() == 2


@dataclass(frozen=True)
class Rule:
    name: str
    group: str  # GraphFusion | UBFusion
    pattern: Callable
    fused: Callable
    wrong: Callable
    applies: Callable | None = None


RULES = (
    Rule(
        "MatMulBiasAddFusionPass",
        "GraphFusion",
        matmul_bias_add,
        fused_matmul_bias_add,
        fused_matmul_bias_add_bf16,
        _two_dimensional,
    ),
    Rule("GeluFusionPass", "GraphFusion", erf_gelu, fused_gelu, fast_gelu),
    Rule("LayerNormFusionPass", "GraphFusion", manual_layer_norm, fused_layer_norm, layer_norm_unbiased),
    Rule("SoftmaxFusionPass", "GraphFusion", manual_softmax, fused_softmax, softmax_no_max_fp16),
    Rule("TbeEltwiseFusionPass", "UBFusion", sigmoid_mul, fused_silu, hard_swish),
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


class FusionConfigError(ValueError):
    pass


# --- switches and faults ---------------------------------------------------------------------
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


@dataclass
class Faults:
    wrong: set
    pairs: list  # (rule that is wrong, rule that must also fire)
    crash: set
    sticky: set


def read_faults(text: str | None) -> Faults:
    """`wrong:R`, `pair:A+B` (A wrong in graphs where B also fired), `crash:R`, `sticky:R`."""
    if text is None:
        text = PLANTED_FAULTS
    faults = Faults(set(), [], set(), set())
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, _, names = item.partition(":")
        rules = names.split("+") if kind == "pair" else [names]
        unknown = [r for r in rules if r not in RULES_BY_NAME]
        if kind not in ("wrong", "pair", "crash", "sticky") or unknown or (kind == "pair" and len(rules) != 2):
            raise FusionConfigError(
                f"{FAULTS_ENV}: bad fault {item!r} (kinds wrong:R, pair:A+B, crash:R, sticky:R; "
                f"rules {', '.join(RULES_BY_NAME)})"
            )
        if kind == "pair":
            faults.pairs.append(tuple(rules))
        else:
            getattr(faults, kind).add(rules[0])
    return faults


# --- the rewrite -------------------------------------------------------------------------------
def _replacement(rule: Rule) -> torch.fx.GraphModule:
    """One node calling the fused function: the graph Inductor sees holds it as a unit."""
    graph = torch.fx.Graph()
    inputs = [graph.placeholder(name) for name in inspect.signature(rule.pattern).parameters]
    graph.output(graph.call_function(rule.fused, tuple(inputs)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def apply_rule(gm: torch.fx.GraphModule, rule: Rule) -> tuple[int, int]:
    """Rewrites every match of the rule; returns (match_times, effect_times)."""
    pattern = torch.fx.symbolic_trace(rule.pattern).graph
    matches = SubgraphMatcher(pattern, ignore_literals=False).match(gm.graph)
    if not matches:
        return 0, 0
    filters = [rule.applies] if rule.applies else None
    replaced = replace_pattern_with_filters(gm, rule.pattern, _replacement(rule), filters)
    return len(matches), len(replaced)


def _make_wrong(gm: torch.fx.GraphModule, rule: Rule) -> None:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is rule.fused:
            node.target = rule.wrong


def fuse(gm: torch.fx.GraphModule, switches: dict, faults: Faults) -> dict:
    """Applies the enabled rules in order; returns {group key: {rule: counts}}."""
    result: dict[str, dict] = {key: {} for key in GROUPS.values()}
    fired = set()
    for rule in RULES:
        if not (rule_enabled(rule, switches) or rule.name in faults.sticky):
            continue
        match_times, effect_times = apply_rule(gm, rule)
        if not match_times:
            continue
        result[GROUPS[rule.group]][rule.name] = {"match_times": str(match_times), "effect_times": str(effect_times)}
        if effect_times:
            fired.add(rule.name)
            if rule.name in faults.crash:
                os.abort()
    wrong = (faults.wrong | {a for a, b in faults.pairs if b in fired}) & fired
    for name in wrong:
        _make_wrong(gm, RULES_BY_NAME[name])
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
    faults = read_faults(os.environ.get(FAULTS_ENV))
    _write_result(fuse(gm, switches, faults))
    return compile_fx(gm, example_inputs)
