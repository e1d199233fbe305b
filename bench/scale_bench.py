#!/usr/bin/env python3
"""What a diagnosis costs at real model scale, and how that cost grows with depth.

The model is Qwen2-0.5B's public shape (bench/qwen2_scale_model.py: hidden 896, intermediate
4864, 14 heads, 2 KV heads, vocab 151936, tied embeddings), random weights, bfloat16, one
compiled forward of 128 tokens, batch 1, Inductor on CPU, the threads a user has by default
(OMP_NUM_THREADS and friends are removed from the environment). For each depth, one after
the other (never two models at once):

  run_cold_s  one plain compiled run from an empty Inductor cache (a user's first run)
  run_warm_s  the same run again on that cache
  run_rss_mb  peak RSS of the plain compiled run (the warm one)
  diag_s      the standard workflow (workflows/graph-mode-precision.yaml through `extends:`) under
              `diagnose`, from an empty Inductor cache of its own
  x_cold      diag_s / run_cold_s (the issue's target: at most 8)
  x_warm      diag_s / run_warm_s
  processes   model processes the steps started (a run shared from another step counts once)
  max_rss_mb  peak RSS of the largest process of the diagnosis (wait4's ru_maxrss: the engine
              and every process it waited for); x_rss: that over run_rss_mb (target: at most 3)
  engine_mb   peak RSS of the engine process itself (VmHWM, read from /proc while it runs)
  disk_mb     bytes left in the run directory (target: within the dump budget, 1 GiB)
  verdict     the verdict's category; with --planted, its culprit's module path is checked

  python bench/scale_bench.py 2 4 8            # depths (default: 2 4)
  python bench/scale_bench.py 24 --planted     # a defect in layer 17's MLP (depths >= 18)
  options: --vocab V (default 151936), --localisation auto|ops|modules_first (graph_compare's; default
           auto, the standard workflow as a user has it),
           --bin PATH, --work DIR (kept), --json FILE (with each step's and each run's seconds)

Then the slope: seconds per layer of diag_s and of run_cold_s, fitted over the depths measured.
Not part of the test suite: 2 layers take minutes, 24 layers most of an hour on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import diagnosis_bench
import yaml
from diagnosis_bench import REPO, bytes_under, find_binary, processes_started

MODEL = Path(__file__).resolve().parent / "qwen2_scale_model.py"
PLANTED_LAYER = 17
# The thread settings a user has by default: none of these set.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCHINDUCTOR_COMPILE_THREADS")
COLUMNS = (
    "layers",
    "verdict",
    "run_cold_s",
    "run_warm_s",
    "run_rss_mb",
    "diag_s",
    "x_cold",
    "x_warm",
    "processes",
    "max_rss_mb",
    "x_rss",
    "engine_mb",
    "disk_mb",
    "load",
)


def measured(argv: list[str], cwd: Path, env: dict, log: Path) -> dict:
    """Runs argv to its end: exit status, wall seconds, peak RSS of the largest process of its tree
    (wait4) and of the process itself (its VmHWM, polled), in MB."""
    started = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        own = {"kb": 0}
        done = threading.Event()

        def poll():
            status = Path(f"/proc/{process.pid}/status")
            while not done.wait(0.5):
                try:
                    for line in status.read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            own["kb"] = max(own["kb"], int(line.split()[1]))
                except (OSError, ValueError):
                    pass

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        _, status, usage = os.wait4(process.pid, 0)
        done.set()
        poller.join()
    return {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": time.monotonic() - started,
        "tree_rss_mb": usage.ru_maxrss / 1024,
        "own_rss_mb": own["kb"] / 1024,
    }


def model_args(layers: int, vocab: int, planted: bool) -> list[str]:
    args = ["--layers", str(layers), "--vocab", str(vocab)]
    return args + (["--planted-layer", str(PLANTED_LAYER)] if planted else [])


def write_workflow(directory: Path, layers: int, vocab: int, planted: bool, localisation: str) -> Path:
    """The standard workflow on the model; with a `localisation` other than auto (the step's
    default), its steps with graph_compare's `localisation` set (an extending file's `steps:`
    replaces the base's)."""
    workflow = directory / "workflow.yaml"
    base = REPO / "workflows" / "graph-mode-precision.yaml"
    standard = os.path.relpath(base, directory)
    lines = [
        f"extends: {standard}",
        f"name: qwen2_scale_{layers}",
        "model:",
        f"  script: {os.path.relpath(MODEL, directory)}",
        f"  args: {json.dumps(model_args(layers, vocab, planted))}",
        "  backend: inductor" if not planted else "  backend: planted_defect_backend:backend",
        "  dtype: bfloat16",
        "  timeout: 3600",
    ]
    text = "\n".join(lines) + "\n"
    if localisation != "auto":
        steps = yaml.safe_load(base.read_text())["steps"]
        for step in steps:
            if step["id"] == "graph_compare":
                step["localisation"] = localisation
        text += yaml.safe_dump({"steps": steps}, sort_keys=False, width=1000)
    workflow.write_text(text)
    return workflow


def plain_run(layers: int, vocab: int, planted: bool, cache: Path, work: Path, env: dict, name: str) -> dict:
    argv = [env["DIAGNOSE_PYTHON"], str(MODEL), *model_args(layers, vocab, planted)]
    return measured(argv, MODEL.parent, {**env, "TORCHINDUCTOR_CACHE_DIR": str(cache)}, work / f"{name}.log")


def diagnosis(binary: Path, workflow: Path, work: Path, env: dict) -> dict:
    out = work / "runs"
    argv = [str(binary), str(workflow), "--output-dir", str(out), "--quiet"]
    cost = measured(argv, REPO, {**env, "TORCHINDUCTOR_CACHE_DIR": str(work / "cache-diagnosis")}, work / "diag.log")
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    report = json.loads((run_dir / "report.json").read_text())
    verdict = report.get("verdict") or {}
    return {
        **cost,
        "verdict": verdict.get("category", f"exit {cost['exit']}"),
        "culprit": verdict.get("culprit", ""),
        "summary": verdict.get("summary", ""),
        "processes": processes_started(report),
        "disk_mb": bytes_under(run_dir) / 2**20,
        "steps": {
            s["id"]: {
                "status": s["status"],
                "seconds": round(s.get("duration_s") or 0, 1),
                "runs": {r["name"]: round(r.get("duration_s") or 0, 1) for r in s.get("runs", [])},
                "summary": s.get("summary", ""),
            }
            for s in report["steps"]
        },
        "run_dir": str(run_dir),
    }


def bench(layers: int, args, work: Path, env: dict) -> dict:
    depth_work = work / f"layers{layers}{'-planted' if args.planted else ''}"
    depth_work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    cache = depth_work / "cache-run"
    cold = plain_run(layers, args.vocab, args.planted, cache, depth_work, env, "run-cold")
    warm = plain_run(layers, args.vocab, args.planted, cache, depth_work, env, "run-warm")
    workflow = write_workflow(depth_work, layers, args.vocab, args.planted, args.localisation)
    diag = diagnosis(args.bin, workflow, depth_work, env)
    row = {
        "layers": layers,
        "verdict": diag["verdict"],
        "run_cold_s": cold["wall_s"],
        "run_warm_s": warm["wall_s"],
        "run_rss_mb": warm["tree_rss_mb"],
        "diag_s": diag["wall_s"],
        "x_cold": diag["wall_s"] / cold["wall_s"],
        "x_warm": diag["wall_s"] / warm["wall_s"],
        "processes": diag["processes"],
        "max_rss_mb": diag["tree_rss_mb"],
        "x_rss": diag["tree_rss_mb"] / warm["tree_rss_mb"],
        "engine_mb": diag["own_rss_mb"],
        "disk_mb": diag["disk_mb"],
        "load": load,
        "culprit": diag["culprit"],
        "summary": diag["summary"],
        "steps": diag["steps"],
        "run_dir": diag["run_dir"],
    }
    if args.planted:
        row["planted_named"] = f"layers.{PLANTED_LAYER}." in diag["summary"]
    return row


def format_cell(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def slope(rows: list[dict], column: str) -> float | None:
    """Least-squares seconds per layer of `column` over the depths measured."""
    if len({r["layers"] for r in rows}) < 2:
        return None
    xs, ys = [r["layers"] for r in rows], [r[column] for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("depths", nargs="*", type=int, default=[2, 4])
    parser.add_argument("--planted", action="store_true", help=f"a defect in layer {PLANTED_LAYER}'s MLP")
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument(
        "--localisation",
        choices=["auto", "ops", "modules_first"],
        default="auto",
        help="graph_compare's localisation (default auto: the standard workflow as is)",
    )
    parser.add_argument("--bin")
    parser.add_argument("--work", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    if args.planted and min(args.depths) <= PLANTED_LAYER:
        raise SystemExit(f"--planted needs depths above {PLANTED_LAYER}")
    args.bin = find_binary(args.bin)
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env["DIAGNOSE_PYTHON"] = os.environ.get("DIAGNOSE_PYTHON", sys.executable)
    env["PYTHONPATH"] = os.pathsep.join([str(diagnosis_bench.PLUGIN), str(MODEL.parent)])
    with tempfile.TemporaryDirectory(prefix="scale_bench-") as temporary:
        work = Path(args.work).resolve() if args.work else Path(temporary)
        print(f"{os.cpu_count()} cores\n| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS), flush=True)
        rows = []
        for layers in args.depths:
            row = bench(layers, args, work, env)
            rows.append(row)
            print("| " + " | ".join(format_cell(row[c]) for c in COLUMNS) + " |", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1))
        for column in ("diag_s", "run_cold_s", "run_warm_s"):
            per_layer = slope(rows, column)
            if per_layer is not None:
                print(f"slope of {column}: {per_layer:.1f} s per layer")
        for row in rows:
            print(f"{row['layers']} layers: {row['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
