#!/usr/bin/env python3
"""How the standard workflow does on real torch.compile bugs (examples/real_bugs/README.md): each
case's workflow run under `diagnose`, its verdict against the expected one, and the share right.
Printed per case: verdict, whether it is the one recorded in tests/python/fixtures/real_bugs.py,
whether that is the right diagnosis, processes the steps started, wall seconds; then the share
diagnosed right.

  python bench/real_bugs_bench.py                      # every case
  python bench/real_bugs_bench.py issue_191499_int8_min
  options: --bin PATH (else $DIAGNOSE_BIN, build/cli/diagnose), --work DIR (kept)

Not part of the test suite (tests/python/workflows/test_real_bugs.py asserts a subset).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "python"))
from fixtures.real_bugs import EXPECTED, run_case, verdict_matches  # noqa: E402
from fixtures.workflow_run import processes_started  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="cases to run (default: all)")
    parser.add_argument("--bin", default=os.environ.get("DIAGNOSE_BIN", str(REPO / "build/cli/diagnose")))
    parser.add_argument("--work", help="keep the runs here")
    options = parser.parse_args()
    cases = options.cases or list(EXPECTED)
    unknown = [case for case in cases if case not in EXPECTED]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(EXPECTED)}")
    work = Path(options.work or tempfile.mkdtemp(prefix="real-bugs-"))
    right = changed = 0
    print(f"{'case':32} {'verdict':24} {'as recorded':11} {'right':5} {'runs':>4} {'wall_s':>7}")
    for case in cases:
        report, seconds = run_case(Path(options.bin), case, work / case, work / "inductor-cache")
        matches = verdict_matches(report, case)
        is_right = matches and EXPECTED[case][2]
        right += is_right
        changed += not matches
        category = report["verdict"]["category"]
        print(
            f"{case:32} {category:24} {'yes' if matches else 'CHANGED':11} {'yes' if is_right else 'no':5} "
            f"{processes_started(report):4d} {seconds:7.1f}"
        )
    print(f"diagnosed right: {right} of {len(cases)} ({100 * right / len(cases):.0f}%); runs in {work}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
