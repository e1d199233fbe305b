"""Runs the examples on a CUDA GPU through the plugin and compares final outputs:
eager CUDA against eager CPU, and Inductor on CUDA (with its compiled-level dump) against
eager CUDA. Not part of the test suite (the suite never needs a GPU).

    python plugins/pytorch/scripts/cuda_check.py [--out DIR] [--examples mlp convnet ...]
                                                 [--diagnose build/cli/diagnose]

Prints one line per check and exits 1 if any check fails. With --diagnose, each pair of run
directories is also compared with `diagnose compare` (its exit code is reported).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = ("mlp", "transformer_block", "convnet")
# cuBLAS/cuDNN (TF32 off by default for matmul, on for conv) and Inductor's Triton kernels
# reorder reductions: fp32 results agree to about 1e-3 relative, not bit for bit.
TOLERANCE = dict(rtol=2e-3, atol=2e-4)


def run(out: Path, name: str, example: str, spec: dict) -> Path:
    run_dir = out / f"{example}-{name}"
    spec_path = out / f"{example}-{name}.json"
    spec_path.write_text(json.dumps({"output_dir": str(run_dir), **spec}))
    env = {**os.environ, "DIAGNOSE_RUN_SPEC": str(spec_path)}
    script = REPO / "examples" / example / "model.py"
    proc = subprocess.run(
        [sys.executable, "-m", "diagnose_pytorch", "run", str(script)], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{example}/{name} failed:\n{proc.stderr[-3000:]}")
    return run_dir


def final_output(run_dir: Path) -> np.ndarray:
    with open(run_dir / "outputs" / "manifest.jsonl") as f:
        records = [json.loads(line) for line in f]
    first = next(r for r in records if r["type"] == "tensor")
    return np.load(run_dir / "outputs" / first["file"]).reshape(first["shape"])


def check(label: str, golden: Path, mine: Path, diagnose: str | None) -> bool:
    a, b = final_output(golden), final_output(mine)
    ok = bool(np.allclose(b, a, **TOLERANCE))
    line = f"{'PASS' if ok else 'FAIL'} {label}: max abs diff {float(np.abs(a - b).max()):.3e}"
    if diagnose:
        proc = subprocess.run(
            [
                diagnose,
                "compare",
                "-gp",
                str(golden / "outputs"),
                "-mp",
                str(mine / "outputs"),
                "-o",
                str(mine / "compare"),
                "--quiet",
            ],
            capture_output=True,
            text=True,
        )
        line += f"; diagnose compare exit {proc.returncode}"
    print(line, flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="where the run directories go (default: a temp dir)")
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES), choices=EXAMPLES)
    parser.add_argument("--diagnose", help="path of the diagnose binary, to also run compare")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check", file=sys.stderr)
        return 2
    out = Path(args.out or tempfile.mkdtemp(prefix="diagnose_cuda_"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"runs in {out} on {torch.cuda.get_device_name()}", flush=True)
    ok = True
    for example in args.examples:
        cpu = run(out, "eager-cpu", example, {"mode": "eager", "device": "cpu"})
        cuda = run(out, "eager-cuda", example, {"mode": "eager", "device": "cuda"})
        inductor = run(out, "inductor-cuda", example, {"backend": "inductor", "device": "cuda"})
        ok &= check(f"{example} eager cuda vs eager cpu", cpu, cuda, args.diagnose)
        ok &= check(f"{example} inductor cuda vs eager cuda", cuda, inductor, args.diagnose)
        buffers = json.loads((inductor / "status.json").read_text()).get("inductor_buffers", {})
        print(f"     {example} inductor cuda: buffers mapped per graph {buffers}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
