#!/usr/bin/env bash
# Sets up the machine and runs diagnose on a bundled example: a TorchAir GE dump
# compared with its FX eager dump, where one op has a planted precision defect.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out/demo
set +e
build/orchestrator/diagnose compare -gp examples/dumps/fx -mp examples/dumps/ge -o out/demo
code=$?
set -e
# 0 (all rows pass) and 1 (a precision problem found) are both answers; others are failures.
if [ "$code" -gt 1 ]; then
  echo "demo: diagnose failed with exit code $code" >&2
  exit "$code"
fi
echo "demo: diagnose exited $code; reports are in out/demo/"
