#!/usr/bin/env bash
# The plugin on the oldest and the newest supported torch (2.5.1, 2.14.1), beside the pinned
# 2.13.0 of .venv: each in a venv of its own (created once, then reused), runs
# tests/python/plugin/test_compat.py and the standard workflow on a few examples with
# DIAGNOSE_PYTHON pointing at that venv, asserting each verdict: the one 2.13 gives where
# the features exist, the stated degradation where they do not (README.md, "Supported torch").
# Prints per version the examples run, their verdicts and the features that were unavailable;
# writes <results>/torch-<version>.xml (pytest's junit).
# Usage: scripts/torch_versions.sh [RESULTS_DIR]   (needs build/cli/diagnose or $DIAGNOSE_BIN)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RESULTS=${1:-$ROOT/build/test-results}
DIAGNOSE=${DIAGNOSE_BIN:-$ROOT/build/cli/diagnose}
VERSIONS=(2.5.1 2.14.1)
# version example category culprit features-unavailable ("-": none; features as status.json
# names them, comma-separated in sorted order). On 2.5 the compiled-level Inductor dump is
# unavailable: fusion_rules' graph_dump_compare judges its final outputs alone (and says why), and
# its bisection (mock GE rules, examples/mock_ge.py) names the culprit 2.13 names; FX's from_node
# holds no graph ids there (provenance: records' graph_nodes by name and target alone); meta_defect
# checks the meta check's internals; fusion_rules' backend compiles with Inductor after its mock
# GE rules, so its runs record Inductor's rules, some of which 2.5 has no switch for
# (inductor_rules). graph_pass_defect's backend needs
# torch._inductor.custom_graph_pass (2.6 and later), so it runs on 2.14.1 only.
EXPECTED=(
  "2.5.1 fusion_rules fusion_defect GeluFusionPass compiled_dump,inductor_rules,provenance"
  "2.5.1 meta_defect dynamo_meta_defect diagnose_example.rms_scale.default inductor_rules,provenance"
  "2.14.1 graph_pass_defect user_pass_defect graph_pass_backend.CanonicalizeOperandOrder -"
  "2.14.1 mlp no_precision_problem - -"
)
mkdir -p "$RESULTS"

# A venv holds torch and the test tools only; the plugin comes from this checkout (PYTHONPATH), so
# one venv serves every clone on the machine and a fresh clone does not install torch again.
VENVS=${DIAGNOSE_TORCH_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/diagnose/torch-venvs}
export PYTHONPATH=$ROOT/plugins/pytorch${PYTHONPATH:+:$PYTHONPATH}

venv_for() {  # venv_for VERSION: the venv's python, installed on first use
  local venv=$VENVS/$1
  local packages=("torch==$1" "$(grep '^numpy==' requirements-dev.txt)" "$(grep '^pytest==' requirements-dev.txt)")
  if [[ "$(cat "$venv/installed" 2>/dev/null)" != "${packages[*]}" ]]; then
    echo "installing ${packages[*]} into $venv" >&2
    rm -rf "$venv"
    python3.11 -m venv "$venv" && "$venv/bin/pip" install -q "${packages[@]}" || return 1
    echo "${packages[*]}" >"$venv/installed"
  fi
  echo "$venv/bin/python"
}

# verdict RUNS_DIR: "category culprit features-unavailable" of the one run in RUNS_DIR
verdict() {
  .venv/bin/python - "$1" <<'EOF'
import json, pathlib, sys
# RUNS_DIR also holds history.sqlite: the run is the folder with a report
report = next(pathlib.Path(sys.argv[1]).glob("*/report.json"))
run = report.parent
verdict = json.loads(report.read_text())["verdict"]
unavailable = set()
for status in run.rglob("status*.json"):
    try:
        features = json.loads(status.read_text()).get("features", {})
    except (OSError, ValueError):
        continue
    unavailable |= {name for name, f in features.items() if not f.get("available", True)}
print(verdict["category"], verdict.get("culprit") or "-", ",".join(sorted(unavailable)) or "-")
EOF
}

# check_version VERSION: test_compat.py and the version's examples; prints a line per example
check_version() {
  local version=$1 python work line status=0 summary=()
  python=$(venv_for "$version" | tail -n 1)
  if [[ ! -x $python ]]; then
    echo "torch $version: could not be installed"
    return 1
  fi
  OMP_NUM_THREADS=1 "$python" -m pytest tests/python/plugin/test_compat.py -q -p no:cacheprovider \
    --junitxml="$RESULTS/torch-$version.xml" || status=1
  work=$(mktemp -d)
  trap "rm -rf '$work'" EXIT  # this version's subshell, should it be stopped
  for line in "${EXPECTED[@]}"; do
    read -r want_version example category culprit features <<<"$line"
    [[ $want_version == "$version" ]] || continue
    DIAGNOSE_PYTHON=$python TORCHINDUCTOR_CACHE_DIR=$work/inductor OMP_NUM_THREADS=1 \
      "$DIAGNOSE" "examples/$example/workflow.yaml" --output-dir "$work/$example" --quiet >"$work/$example.log" 2>&1
    read -r got_category got_culprit unavailable <<<"$(verdict "$work/$example" 2>/dev/null)"
    result="torch $version: $example -> ${got_category:-no report} ${got_culprit:-}; features unavailable: ${unavailable:--}"
    if [[ $got_category != "$category" || ($culprit != - && $got_culprit != *"$culprit"*) ||
      ${unavailable:--} != "$features" ]]; then
      result+="  FAILED (expected $category $culprit; features unavailable: $features)"
      tail -n 20 "$work/$example.log"
      status=1
    fi
    summary+=("$result")
  done
  rm -rf "$work"
  printf '%s\n' "${summary[@]}"
  return $status
}

# The versions side by side: each runs one model process at a time, so two of them share the two
# cores. Each one's output is printed whole once it is done.
pids=()
for version in "${VERSIONS[@]}"; do
  check_version "$version" >"$RESULTS/torch-$version.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!VERSIONS[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "$RESULTS/torch-${VERSIONS[$i]}.log"
done
exit $status
