#!/usr/bin/env bash
# Screenshots of report.html for three bundled examples, taken with headless Chromium (installed by
# scripts/setup.sh) and kept in docs/screenshots/: a fusion rule (examples/fusion_rules), a state
# defect (examples/kv_cache_decode) and no problem (examples/mlp). Runs each example's workflow with
# build/cli/diagnose (or $DIAGNOSE_BIN) into out/screenshots/<example>/, then the page's top
# (the verdict box) at 1100 x 1300 pixels; the README shows them.
# Usage: scripts/report_screenshots.sh           (about 10 minutes on a 2-core machine)
#        scripts/report_screenshots.sh --again   (the runs already in out/screenshots: their
#                                                 pages rendered again (diagnose report), no model run)
set -euo pipefail
cd "$(dirname "$0")/.."
diagnose="${DIAGNOSE_BIN:-$PWD/build/cli/diagnose}"
chromium="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chromium" ]; then
  echo "report_screenshots: chromium not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
export DIAGNOSE_PYTHON="${DIAGNOSE_PYTHON:-$PWD/.venv/bin/python}" PYTHONPATH="$PWD/plugins/pytorch"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$PWD/out/inductor-cache}" OMP_NUM_THREADS=1
sandbox=()
[ "$(id -u)" -eq 0 ] && sandbox=(--no-sandbox)  # Chromium refuses to sandbox as root
mkdir -p docs/screenshots
again="${1:-}"
for example in fusion_rules kv_cache_decode mlp; do
  out="out/screenshots/$example"
  set +e
  if [ "$again" = --again ]; then
    "$diagnose" report "$(ls -d "$out"/*/ | head -n 1)" --quiet >/dev/null
  else
    rm -rf "$out"
    mkdir -p "$out"
    "$diagnose" "examples/$example/workflow.yaml" --output-dir "$out" --quiet
  fi
  code=$?
  set -e
  if [ "$code" -gt 1 ]; then
    echo "report_screenshots: $example: diagnose exited $code" >&2
    exit "$code"
  fi
  run="$(ls -d "$out"/*/ | head -n 1)"
  profile="$(mktemp -d)"
  "$chromium" --headless --disable-gpu --no-first-run --hide-scrollbars "${sandbox[@]}" \
    --user-data-dir="$profile" --window-size=1100,1300 \
    --screenshot="$PWD/docs/screenshots/$example.png" "file://$PWD/${run}report.html" 2>/dev/null
  rm -rf "$profile"
  echo "docs/screenshots/$example.png: $run"
done
