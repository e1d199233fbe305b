#!/usr/bin/env bash
# Makes the real torchair importable without an NPU: downloads the torch-npu wheel from PyPI
# without its dependencies (our torch stays as it is), caches it in ~/.cache/diagnose, and
# extracts only its pure-Python torchair (torch_npu/dynamo/torchair, BSD) into
# build/torchair/torch_npu-$VERSION/torchair. Its C extensions need CANN and are left out: the
# CPU stand-in (tests/python/cann_stand_in) provides them. Idempotent; prints the directory to
# put on PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${TORCH_NPU_VERSION:-2.14.0}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/diagnose/torch-npu-$VERSION
TARGET=$PWD/build/torchair/torch_npu-$VERSION
PIP=${PIP:-.venv/bin/pip}

if [ ! -f "$TARGET/torchair/__init__.py" ]; then
  mkdir -p "$CACHE"
  wheel=$(ls "$CACHE"/torch_npu-"$VERSION"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    "$PIP" download -q --no-deps "torch-npu==$VERSION" -d "$CACHE" >&2
    wheel=$(ls "$CACHE"/torch_npu-"$VERSION"-*.whl | head -1)
  fi
  rm -rf "$TARGET.partial"
  mkdir -p "$TARGET.partial"
  .venv/bin/python - "$wheel" "$TARGET.partial" <<'EOF'
import sys, zipfile
from pathlib import Path

wheel, target = sys.argv[1], Path(sys.argv[2])
prefix = "torch_npu/dynamo/"
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith(prefix + "torchair/") and not name.endswith(".so") and not name.endswith("/"):
            path = target / name[len(prefix):]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.read(name))
EOF
  rm -rf "$TARGET"
  mv "$TARGET.partial" "$TARGET"
fi
echo "$TARGET"
