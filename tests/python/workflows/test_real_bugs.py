"""The standard workflow on real torch.compile bugs (examples/real_bugs/README.md): the verdict
each case gets, asserted for every case (bench/real_bugs_bench.py prints the share right and the cost)."""

from __future__ import annotations

import json

import pytest

from fixtures.real_bugs import EXPECTED, run_case, verdict_matches


# Every case, the two misses included: their recorded verdict is asserted too, so that a change in
# either direction is seen (a fixed miss then moves to the right verdict in fixtures/real_bugs.py).
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_real_bug_verdict(diagnose_bin, tmp_path, inductor_cache, case):
    report, seconds = run_case(diagnose_bin, case, tmp_path / "runs", inductor_cache)
    summary = {step["id"]: (step["status"], step["summary"]) for step in report["steps"]}
    print(f"{case}: {seconds:.1f} s, verdict {report['verdict']['category']}")
    assert verdict_matches(report, case), (EXPECTED[case], report["verdict"]["culprit"], json.dumps(summary, indent=1))
    if report["verdict"]["category"] == "localized_op_defect":  # named only once an intervention confirmed it
        confirmation = report["verdict"]["confirmation"]
        assert confirmation["outcome"] == "confirmed" and 1 <= confirmation["runs"] <= 2, confirmation
