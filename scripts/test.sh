#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh) and runs every test: GoogleTest (also under
# AddressSanitizer + UndefinedBehaviorSanitizer), pytest, and the fuzz targets for a
# bounded time. Exits non-zero if anything fails.
# --quick (while developing, about 5 minutes after setup and build): the lint, the C++ tests, the
# Python tests that run no model (pytest -m "not e2e", tests/python/conftest.py) and one diagnosis.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=false
PYTEST_SELECTION=()
if [[ ${1:-} == --quick ]]; then
  QUICK=true
  PYTEST_SELECTION=(-m "quick or not e2e")
elif (($#)); then
  echo "usage: scripts/test.sh [--quick]" >&2
  exit 2
fi
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
RESULTS=$ROOT/build/test-results
failed_stages=()
stage_times=()

stage() {  # stage [--quick] NAME COMMAND...: a --quick stage runs under --quick too
  local in_quick=false
  if [[ $1 == --quick ]]; then
    in_quick=true
    shift
  fi
  if $QUICK && ! $in_quick; then return; fi
  local name=$1
  shift
  echo
  echo "=== $name"
  local started=$SECONDS
  if ! "$@"; then
    failed_stages+=("$name")
    echo "=== $name: FAILED"
  fi
  stage_times+=("$name: $((SECONDS - started)) s")
}

# The stages after the Python tests run side by side: some mostly wait (on Slurm's scheduler and
# its jobs' sleeps, on one model process at a time, on the clock), and the others' builds fill the
# cores meanwhile (run one after another, they took 15 minutes of CI's 50). Each one's output goes
# to a log, printed with its time and status by finish_background_stages.
background_names=()
background_pids=()
background_logs=()
background_stage() {  # background_stage NAME COMMAND...: never under --quick
  if $QUICK; then return; fi
  local name=$1 log=$RESULTS/stage-${#background_names[@]}.log
  shift
  (
    started=$SECONDS
    "$@"
    status=$?
    echo $((SECONDS - started)) >"$log.seconds"
    exit $status
  ) >"$log" 2>&1 &
  background_names+=("$name")
  background_pids+=($!)
  background_logs+=("$log")
}

finish_background_stages() {
  local i status
  for i in "${!background_pids[@]}"; do
    wait "${background_pids[$i]}"
    status=$?
    echo
    echo "=== ${background_names[$i]} (ran beside other stages)"
    cat "${background_logs[$i]}"
    if ((status != 0)); then
      failed_stages+=("${background_names[$i]}")
      echo "=== ${background_names[$i]}: FAILED"
    fi
    stage_times+=("${background_names[$i]}: $(cat "${background_logs[$i]}.seconds") s (beside)")
  done
  background_names=()
  background_pids=()
  background_logs=()
}

scripts/setup.sh || { echo "setup failed"; exit 1; }
stage_times+=("setup and build: $SECONDS s")
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

# One clang build serves both: the C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer,
# and the libFuzzer targets (the comparison core built with coverage and the same sanitizers).
# It compiles one file at a time, as the Release build (a unity build) does not: the sources
# must not rely on what another file of their batch brings in. Line tables are all the debug
# information a sanitizer's stack trace needs.
SANITIZED=build-sanitized
FUZZ_TARGETS=(fuzz_ge_dump fuzz_graph_txt fuzz_npy)
SANITIZED_TARGETS=(compare_tests orchestrator_tests steps_tests fusion_files_tests runspec_tests diagnose "${FUZZ_TARGETS[@]}")
build_sanitized() {
  CC=clang CXX=clang++ cmake -S . -B "$SANITIZED" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=OFF \
    -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DDIAGNOSE_SANITIZE=ON -DDIAGNOSE_FUZZ=ON >/dev/null &&
    cmake --build "$SANITIZED" -j2 --target "$@"
}

# The sanitized build starts now, at the lowest CPU priority, beside the lint, the C++ tests and
# the Python tests: it takes only the CPU time they leave idle, and it gets its normal priority back
# when the Python tests end (where the user may raise a priority: as root). A session of its own,
# its autogroup niced too: the kernel shares the CPU between sessions first (sched_autogroup), and
# each model run forked from a warm process leads a session of its own, so that a nice value alone
# would still have given the build as much CPU as a model run.
if ! $QUICK; then
  (
    export SANITIZED
    export -f build_sanitized
    exec setsid -w bash -c '
      renice -n 19 -p $$ >/dev/null
      { echo 19 >/proc/$$/autogroup; } 2>/dev/null
      build_sanitized "$@"
      status=$?
      echo "sanitized build: $SECONDS s, started before the lint"
      exit $status' sanitized "${SANITIZED_TARGETS[@]}"
  ) >"$RESULTS/sanitized-build.log" 2>&1 &
  sanitized_build=$!
fi
descendants() {  # descendants PID: every process below PID
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}

# Style (seconds): ruff.toml's lint rules and formatting over all of the project's Python, and
# .clang-format over its C++; all run even when one fails, so one pass lists everything to fix.
lint() {
  local status=0
  .venv/bin/ruff check . || status=1
  .venv/bin/ruff format --check . || status=1
  git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run -Werror || status=1
  return $status
}
stage --quick "Lint (ruff, clang-format)" lint

stage --quick "C++ tests" ctest --test-dir build --output-on-failure -j2 --output-junit "$RESULTS/ctest.xml"

# Two workers: most tests wait on model processes. One OpenMP thread per model process, so
# two of them share the two cores instead of spinning against each other. One Inductor cache
# for all the workers, started empty: a graph compiles once per test session.
rm -rf "$ROOT/build/test-inductor-cache"
stage --quick "Python tests" env DIAGNOSE_BIN="$ROOT/build/cli/diagnose" OMP_NUM_THREADS=1 \
  DIAGNOSE_TEST_INDUCTOR_CACHE="$ROOT/build/test-inductor-cache" \
  .venv/bin/python -m pytest tests/python "${PYTEST_SELECTION[@]}" -q -p no:cacheprovider -n 2 --dist loadgroup \
  --junitxml="$RESULTS/pytest.xml"
if ! $QUICK; then
  for pid in "$sanitized_build" $(descendants "$sanitized_build"); do
    renice -n 0 -p "$pid"
    echo 0 >"/proc/$pid/autogroup"
  done >/dev/null 2>&1
fi

# The plugin on the oldest and the newest supported torch (2.5.1, 2.14.1), each in a venv of its
# own, kept in ~/.cache/diagnose/torch-venvs: test_compat.py and the standard workflow on a few examples.
background_stage "Other torch versions (2.5.1, 2.14.1)" env DIAGNOSE_BIN="$ROOT/build/cli/diagnose" \
  scripts/torch_versions.sh "$RESULTS"

# A one-node Slurm cluster on 127.0.0.1 for the slurm runner's end-to-end tests.
background_stage "Slurm runner (one-node cluster)" env DIAGNOSE_BIN="$ROOT/build/cli/diagnose" \
  tests/slurm/run.sh --junitxml="$RESULTS/pytest-slurm.xml"

# The wheel (pyproject.toml; built in build-wheel, its objects from ccache when the test build made
# them) installed into a venv that holds torch alone (made once in ~/.cache/diagnose, emptied
# of all else before each use); then, from an empty directory with no DIAGNOSE_PYTHON, `diagnose
# check` on the bundled fusion_rules must give that example's verdict.
wheel() {
  local venv=${XDG_CACHE_HOME:-$HOME/.cache}/diagnose/wheel-venv work status compiler
  if [[ "$(cat "$venv/installed" 2>/dev/null)" != torch==2.13.0 ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv" && "$venv/bin/pip" install -q torch==2.13.0 || return 1
    echo torch==2.13.0 >"$venv/installed"
  fi
  "$venv/bin/pip" uninstall -q -y diagnose numpy 2>/dev/null
  rm -rf build/wheel-dist
  # the test build's compiler, by the same name, which ccache hashes (scikit-build-core would take
  # Python's, g++, where CMake found c++)
  compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
  CMAKE_ARGS="-DCMAKE_CXX_COMPILER=$compiler" .venv/bin/pip wheel -q --no-deps . -w build/wheel-dist &&
    "$venv/bin/pip" install -q build/wheel-dist/*.whl || return 1
  work=$(mktemp -d)
  (cd "$work" && env -u DIAGNOSE_PYTHON PATH="$venv/bin:$PATH" OMP_NUM_THREADS=1 \
    diagnose check "$venv/share/diagnose/examples/fusion_rules/model.py" -q)
  status=$?
  # a script passing its own backend object: the verdict of its workflow.yaml, no YAML written
  "$venv/bin/python" - "$work" "$status" <<'EOF'
import json, pathlib, sys
verdict = json.loads(next(pathlib.Path(sys.argv[1]).glob("runs/*/report.json")).read_text())["verdict"]
print("wheel: diagnose check fusion_rules:", verdict["category"], verdict["culprit"], "exit", sys.argv[2])
sys.exit(not (verdict["category"] == "fusion_defect" and "GeluFusionPass" in verdict["culprit"] and sys.argv[2] == "1"))
EOF
  status=$?
  "$venv/bin/pip" uninstall -q -y diagnose numpy
  rm -rf "$work"
  return $status
}
background_stage "Wheel: pip wheel, install beside torch alone, diagnose check" wheel

sanitized() {
  wait "$sanitized_build"
  local status=$?
  cat "$RESULTS/sanitized-build.log"
  ((status == 0)) &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir "$SANITIZED" --output-on-failure -j2 --output-junit "$RESULTS/ctest-asan.xml"
}
stage "C++ tests under ASan+UBSan" sanitized

fuzz() {
  build_sanitized "${FUZZ_TARGETS[@]}" || return 1
  local status=0 name corpus
  for name in "${FUZZ_TARGETS[@]}"; do
    corpus=$(mktemp -d)
    cp -r "tests/fuzz/corpus/${name#fuzz_}/." "$corpus/"
    echo "fuzzing $name for ${FUZZ_SECONDS}s"
    if ! "$SANITIZED/tests/fuzz/$name" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 "$corpus" \
      >"$RESULTS/$name.log" 2>&1; then
      tail -n 40 "$RESULTS/$name.log"
      status=1
    fi
    rm -rf "$corpus"
  done
  return $status
}
background_stage "Fuzz targets (${FUZZ_SECONDS}s each)" fuzz

finish_background_stages

printf 'stage time: %s\n' "${stage_times[@]}"
.venv/bin/python scripts/summarize_tests.py "$RESULTS"/*.xml
if ((${#failed_stages[@]})); then
  echo "failed stages: ${failed_stages[*]}"
  exit 1
fi
