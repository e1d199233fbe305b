#!/usr/bin/env bash
# Sets up the machine and runs the standard graph-mode precision workflow
# (workflows/graph-mode-precision.yaml) on a bundled example with a planted fusion-rule
# defect (examples/fusion_rules): real PyTorch, real torch.compile, on CPU. Prints the verdict;
# the reports are in out/demo/<run>/ (report.md, report.json, junit.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out/demo
set +e
DIAGNOSE_PYTHON="$PWD/.venv/bin/python" TORCHINDUCTOR_CACHE_DIR="$PWD/out/inductor-cache" \
  build/cli/diagnose examples/fusion_rules/workflow.yaml --output-dir out/demo
code=$?
set -e
# 0 (no problem) and 1 (a precision problem diagnosed) are both answers; others are failures.
if [ "$code" -gt 1 ]; then
  echo "demo: diagnose failed with exit code $code" >&2
  exit "$code"
fi
echo "demo: diagnose exited $code; the run directory is the newest one in out/demo/"
