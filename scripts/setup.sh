#!/usr/bin/env bash
# Installs everything diagnose needs on a fresh Debian 12 machine and builds it (a unity
# build: the sources compile in batches, about half the time of one file at a time).
# Idempotent: re-running only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libyaml-cpp-dev libboost-dev libboost-filesystem-dev nlohmann-json3-dev libcli11-dev
  libprotobuf-dev protobuf-compiler libgtest-dev libgmock-dev libsqlite3-dev
  clang libclang-rt-14-dev clang-format
  python3 python3-venv
  chromium
  slurm-wlm munge
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements-stamp
want=$(cat requirements-dev.txt plugins/pytorch/pyproject.toml 2>/dev/null | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing Python packages"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements-dev.txt
  if [ -f plugins/pytorch/pyproject.toml ]; then
    .venv/bin/pip install -q -e plugins/pytorch
  fi
  echo "$want" > "$stamp"
fi

# The real torchair (pure Python, from the torch-npu wheel) for the TorchAir tests and examples.
scripts/fetch_torchair.sh >/dev/null

BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
echo "setup: built $ROOT/$BUILD/cli/diagnose"
