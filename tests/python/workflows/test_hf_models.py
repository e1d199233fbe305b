"""The standard workflow end to end on Hugging Face models (examples/hf_causal_lm): tiny
LlamaForCausalLM and GPT2LMHeadModel from configs with seeded random weights, offline, Inductor
on CPU: the Llama in float32, the GPT-2 in bfloat16, the Llama with a graph break and a second
call with another sequence length, and the Llama decoding with generate() (batch 1, static
cache, the forward compiled) in bfloat16. One case per behaviour: gpt2.yaml and
llama_generate.yaml (the float32 forms of two of them) are examples, not tests; float32
decoding is tested on examples/kv_cache_decode. Nothing is planted: the verdict must be "no precision problem", and it
must rest on the evidence — the graph compare judges at least 90% of its rows, the logits among
them (and the KV cache's keys and values where the model returns it), the state every call leaves,
and every graph of every call (before and after the break, both lengths, prefill and decode)."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixtures.workflow_run import processes_started

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "hf_causal_lm"
JUDGED = ("pass", "fail")  # verdicts of a row that was judged (the others: not comparable)
MIN_JUDGED_SHARE = 0.9  # the documented default share of rows a comparing step must judge

# workflow file, calls (steps) of the model, whether the model has a graph break
CASES = [
    ("workflow.yaml", 1, False),  # Llama, float32, use_cache=True: returns its DynamicCache
    ("gpt2_bf16.yaml", 1, False),
    ("llama_graph_break.yaml", 2, True),  # Llama, float32, .item() in layer 1, 16 then 12 tokens
    # generate(), batch 1, static cache: the prefill and 3 decode calls of the compiled forward
    ("llama_generate_bf16.yaml", 4, False),
]
GENERATE = ("llama_generate_bf16.yaml",)
LOGITS = {1: [[2, 16, 256]], 2: [[2, 16, 256], [2, 12, 256]], 4: [[1, 1, 256]] * 4}
# the cases whose model returns its KV cache: the final outputs by path, each of shape
# [batch, KV heads, tokens, head dim] (the field is `cache` in transformers 5.24,
# `past_key_values` before); generate's static cache holds prompt + new tokens - 1 positions
KV_CACHE = {"workflow.yaml": [2, 2, 16, 16], "llama_generate_bf16.yaml": [1, 2, 11, 16]}
KV_TENSORS = [("0", "keys"), ("0", "values"), ("1", "keys"), ("1", "values")]  # two layers
# GPT-2 in transformers 5 has no buffers and is called once without a cache: it carries no state
STATELESS = ("gpt2_bf16.yaml",)
KV_PATH = re.compile(r"output\.(cache|past_key_values)\.layers\.([01])\.(keys|values)")


def is_final(row: dict) -> bool:
    """A final output's row: `output` (by position) or `output.{path}` (logits, cache tensors)."""
    return row["op_key"] == "output" or row["op_key"].startswith("output.")


def run_workflow(diagnose_bin: Path, workflow: str, out: Path, cache: Path) -> tuple[dict, Path, int]:
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    started = time.monotonic()
    done = subprocess.run(
        [str(diagnose_bin), str(EXAMPLE / workflow), "--output-dir", str(out), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    runs = [p for p in out.iterdir() if p.is_dir()]
    assert len(runs) == 1, (done.stdout, done.stderr)
    report = json.loads((runs[0] / "report.json").read_text())
    model_runs = processes_started(report)
    print(f"{workflow}: {time.monotonic() - started:.1f} s, {model_runs} runs, verdict {report['verdict']['category']}")
    return report, runs[0], done.returncode


def compare_result(run_dir: Path, step: str) -> dict:
    return json.loads((run_dir / "steps" / step / "compare" / "result.json").read_text())


def rows_of(result: dict) -> list[dict]:
    return [dict(row, graph=group["graph"]) for group in result["groups"] for row in group["rows"]]


def coverage(result: dict) -> str:
    """Judged / not comparable by reason / unmatched, for the assertion messages."""
    rows = rows_of(result)
    reasons = collections.Counter(r["cmp_fail_reason"] for r in rows if r["verdict"] not in JUDGED)
    return json.dumps(
        {
            "judged": sum(r["verdict"] in JUDGED for r in rows),
            "rows": len(rows),
            "not_comparable": dict(reasons.most_common(8)),
            "unmatched": len(result["summary"]["unmatched"]),
        },
        indent=1,
    )


@pytest.mark.parametrize("workflow,calls,graph_break", CASES, ids=[c[0].removesuffix(".yaml") for c in CASES])
def test_hf_model_no_problem_on_judged_evidence(diagnose_bin, tmp_path, inductor_cache, workflow, calls, graph_break):
    report, run_dir, exit_code = run_workflow(diagnose_bin, workflow, tmp_path / "runs", inductor_cache)
    steps = {step["id"]: step for step in report["steps"]}
    summary = {step_id: (step["status"], step["summary"]) for step_id, step in steps.items()}
    assert report["verdict"]["category"] == "no_precision_problem", json.dumps(summary, indent=1)
    assert exit_code == 0
    assert all(step["status"] in ("pass", "skipped") for step in report["steps"]), summary
    assert steps["graph_compare"]["status"] == "pass", summary

    # the share of rows judged, from the step's own counts (report.json) and its result.json
    metrics = steps["graph_compare"]["metrics"]
    result = compare_result(run_dir, "graph_compare")
    rows = rows_of(result)
    assert metrics["rows"] == len(rows) and metrics["compared"] == sum(r["verdict"] in JUDGED for r in rows)
    assert metrics["rows"] > 0 and metrics["compared"] >= MIN_JUDGED_SHARE * metrics["rows"], coverage(result)

    # the logits (and the KV cache): the final outputs of every call, judged (by the step's own
    # compare of the runs' outputs where it has one, else among the dump's rows)
    final_dirs = [d for d in ("compare-outputs", "compare") if (run_dir / "steps" / "graph_compare" / d).is_dir()]
    for directory in final_dirs[:1]:
        finals_result = json.loads((run_dir / "steps" / "graph_compare" / directory / "result.json").read_text())
        finals = sorted((r for r in rows_of(finals_result) if is_final(r)), key=lambda r: r["token_id"])
        judged = [r for r in finals if r["verdict"] in JUDGED]
        logits = [r["my_shape"] for r in judged if r["op_key"] == "output.logits"]
        assert logits == LOGITS[calls], coverage(finals_result)
        cache = [r for r in judged if KV_PATH.fullmatch(r["op_key"])]
        cache_paths = sorted(KV_PATH.fullmatch(r["op_key"]).group(2, 3) for r in cache)
        assert cache_paths == (sorted(KV_TENSORS * calls) if workflow in KV_CACHE else []), [
            r["op_key"] for r in finals
        ]
        assert all(r["my_shape"] == KV_CACHE[workflow] for r in cache)
        # besides logits and cache tensors, a static cache returns only its per-layer lengths
        others = [r["op_key"] for r in finals if r not in cache and r["op_key"] != "output.logits"]
        assert all(key.endswith("cumulative_length") for key in others), others
        assert len(judged) == len(finals), coverage(finals_result)
        # the state each call leaves (the model's buffers, the static cache written in place), judged
        state = [r for r in rows_of(finals_result) if r["op_key"].startswith("state.")]
        assert all(r["verdict"] in JUDGED for r in state), coverage(finals_result)
        assert {r["token_id"] for r in state} == (set() if workflow in STATELESS else set(range(calls)))
        if workflow in GENERATE:
            written = {r["op_key"] for r in state if r["token_id"] == calls - 1}
            assert {f"state.inputs.kwargs.cache.layers.{i}.{kv}" for i, kv in KV_TENSORS} <= written, written
    if "final_outputs" in metrics:
        assert metrics["final_outputs"]["judged"] == metrics["final_outputs"]["rows"], metrics

    # every graph the compiled code ran, in every call, has judged rows
    target = json.loads((run_dir / "steps" / "graph_compare" / "target" / "status.json").read_text())
    golden = json.loads((run_dir / "steps" / "graph_compare" / "golden" / "status.json").read_text())
    assert [c["step"] for c in target["calls"]] == list(range(calls))
    assert target["graphs"]["count"] == golden["graphs"]["count"] >= min(calls, 2)  # generate: prefill and decode
    records = [
        json.loads(line) for line in (run_dir / "steps" / "graph_compare" / "target" / "dump" / "manifest.jsonl").open()
    ]
    dumped = {(r["graph"], r["step"]) for r in records if r.get("kind") == "op"}
    judged = {(r["graph"], r["token_id"]) for r in rows if r["verdict"] in JUDGED and not is_final(r)}
    assert dumped and dumped <= judged, f"graphs (graph, step) dumped but not judged: {sorted(dumped - judged)}"
    for step in range(calls):
        graphs = {graph for graph, token in judged if token == step}
        assert len(graphs) >= (2 if graph_break else 1), (step, sorted(judged), coverage(result))
    if graph_break:
        assert target["graphs"]["graph_breaks"] >= 1
