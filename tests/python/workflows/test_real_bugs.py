"""The standard workflow on real torch.compile bugs (examples/real_bugs/README.md): the verdict
each case gets, asserted for a representative subset (the whole corpus: bench/real_bugs_bench.py)."""

from __future__ import annotations

import json

import pytest

from fixtures.real_bugs import EXPECTED, run_case, verdict_matches

# The cheapest case of each conclusion: a compiler bug localised in the graph, eager's own overflow
# (a known cause), eager wrong where float64 agrees with the compiled Inf (NaN/Inf by position).
IN_CI = ("issue_187018_uint8_abs", "issue_183607_fp16_square", "issue_150114_atan_cond")


@pytest.mark.parametrize("case", IN_CI)
def test_real_bug_verdict(diagnose_bin, tmp_path, inductor_cache, case):
    report, seconds = run_case(diagnose_bin, case, tmp_path / "runs", inductor_cache)
    summary = {step["id"]: (step["status"], step["summary"]) for step in report["steps"]}
    print(f"{case}: {seconds:.1f} s, verdict {report['verdict']['category']}")
    assert verdict_matches(report, case), (EXPECTED[case], report["verdict"]["culprit"], json.dumps(summary, indent=1))
