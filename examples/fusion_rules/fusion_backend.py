"""An example torch.compile backend built on Inductor with named, switchable fusion rules, in
the manner of GE: each rule is an FX pattern rewrite applied to the Dynamo graph before the
graph goes to Inductor (compile_fx). Rules are switched by a TorchAir-format fusion switch file
($DIAGNOSE_FUSION_SWITCH_FILE) and what fired is written to ./fusion_result.json in GE's
format, both as examples/mock_ge.py mocks them. One rule is planted wrong (see README.md);
$FUSION_EXAMPLE_FAULTS changes the faults.

    torch.compile(model, backend=fusion_backend.backend)
    spec: {"backend": "fusion_backend:backend"} with examples/fusion_rules on sys.path
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.append(str(Path(__file__).resolve().parent.parent))  # examples/, where mock_ge.py is
import mock_ge  # noqa: E402

FAULTS_ENV = "FUSION_EXAMPLE_FAULTS"
PLANTED_FAULTS = "wrong:GeluFusionPass"


def sigmoid_mul(x):
    return x * torch.sigmoid(x)


# --- the fused forms besides GE's, and the defective variant each rule can be faulted into ----
def fused_matmul_bias_add_bf16(x, w, b):
    """Accumulates in bfloat16."""
    return torch.addmm(b.bfloat16(), x.bfloat16(), w.bfloat16()).to(x.dtype)


def fast_gelu(x):
    """The sigmoid approximation x*sigmoid(1.702x): a different function (error up to ~0.02)."""
    return x * torch.sigmoid(1.702 * x)


def fused_silu(x):
    return F.silu(x)


def hard_swish(x):
    """The piecewise-linear sigmoid x*clamp(x/6+1/2, 0, 1) of fast kernels: a different function."""
    return F.hardswish(x)


def layer_norm_unbiased(x, gamma, beta):
    """Normalises with the unbiased (n-1) variance."""
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + mock_ge.LAYER_NORM_EPS) * gamma + beta


def softmax_no_max_fp16(x):
    """No max subtraction, computed in float16."""
    e = torch.exp(x.half())
    return (e / e.sum(-1, keepdim=True)).to(x.dtype)


RULES = (
    mock_ge.MATMUL_BIAS_ADD.with_fault(fused_matmul_bias_add_bf16),
    mock_ge.GELU.with_fault(fast_gelu),
    mock_ge.LAYER_NORM.with_fault(layer_norm_unbiased),
    mock_ge.SOFTMAX.with_fault(softmax_no_max_fp16),
    mock_ge.PatternRule("TbeEltwiseFusionPass", "UBFusion", sigmoid_mul, fused_silu, hard_swish),
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


# --- faults ------------------------------------------------------------------------------------
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
            raise mock_ge.FusionConfigError(
                f"{FAULTS_ENV}: bad fault {item!r} (kinds wrong:R, pair:A+B, crash:R, sticky:R; "
                f"rules {', '.join(RULES_BY_NAME)})"
            )
        if kind == "pair":
            faults.pairs.append(tuple(rules))
        else:
            getattr(faults, kind).add(rules[0])
    return faults


# --- the rewrite -------------------------------------------------------------------------------
def _make_wrong(gm: torch.fx.GraphModule, rule: mock_ge.PatternRule) -> None:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is rule.fused:
            node.target = rule.faulty


def fuse(gm: torch.fx.GraphModule, switches: dict, faults: Faults) -> dict:
    """Applies the enabled rules in order; returns {group key: {rule: counts}}."""
    matched = []
    for rule in RULES:
        if not (mock_ge.rule_enabled(rule, switches) or rule.name in faults.sticky):
            continue
        match_times, effect_times = mock_ge.rewrite(gm, rule.pattern, rule.fused, rule.applies)
        if not match_times:
            continue
        matched.append((rule, match_times, effect_times))
        if effect_times and rule.name in faults.crash:
            os.abort()
    fired = {rule.name for rule, _, effect_times in matched if effect_times}
    wrong = (faults.wrong | {a for a, b in faults.pairs if b in fired}) & fired
    for name in wrong:
        _make_wrong(gm, RULES_BY_NAME[name])
    gm.graph.lint()
    gm.recompile()
    return mock_ge.graph_result(matched)


fusion_report = mock_ge.FusionReport()  # every graph of this process


def backend(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    fusion_report.add(fuse(gm, mock_ge.switches_from_environment(), read_faults(os.environ.get(FAULTS_ENV))))
    return compile_fx(gm, example_inputs)
