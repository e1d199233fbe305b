#!/usr/bin/env bash
# The standard workflow with device cuda, for a machine with an NVIDIA GPU and a CUDA build
# of PyTorch in .venv (not run by the tests: there is no GPU in CI). Eager on CUDA is compared
# with eager on CPU, Inductor compiles for CUDA (Triton), single ops compile on CUDA.
#   scripts/cuda_workflow.sh [EXAMPLE]      # default: mlp (clean: expect no precision problem)
set -euo pipefail
cd "$(dirname "$0")/.."
example="${1:-mlp}"
python="$PWD/.venv/bin/python"
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "no CUDA device visible to torch")'
mkdir -p out/cuda
workflow="out/cuda/$example.yaml"
# The example's workflow with the model on cuda (extends keeps its steps).
cat > "$workflow" <<YAML
extends: $PWD/workflows/graph-mode-precision.yaml
name: cuda-$example
model:
  script: $PWD/examples/$example/model.py
  backend: inductor
  device: cuda
  timeout: 1200
YAML
DIAGNOSE_PYTHON="$python" build/cli/diagnose "$workflow" --output-dir out/cuda
