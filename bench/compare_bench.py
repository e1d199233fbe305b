#!/usr/bin/env python3
"""Throughput and memory of `diagnose compare` against a numpy implementation of the same
metrics and against a plain read-and-sum pass over the same bytes.

  python bench/compare_bench.py                 # ~3 GB dump pair (golden + mine)
  python bench/compare_bench.py --quick         # ~200 MB, seconds
  python bench/compare_bench.py --big           # one tensor pair of 4 GB in all: peak RSS < 256 MB
  options: --dir DIR (keep the data there), --total-gb X, --big-gb X, --bin PATH, --threads N

Every tool runs in its own subprocess; its peak RSS comes from GNU time (%M), or from
getrusage(RUSAGE_CHILDREN) where /usr/bin/time is missing.
The files are read once before timing, so every tool reads them from the page cache; the
plain pass therefore measures this machine's memory-bound limit, not the disk.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
# Realistic LLM weight / activation shapes, cycled until the size target is reached.
SHAPES = [
    ((4096, 11008), "fp32"),
    ((32000, 4096), "fp16"),
    ((11008, 4096), "bf16"),
    ((4096, 11008), "fp16"),
    ((4096, 4096), "fp32"),
    ((8, 4096, 4096), "fp16"),
]
TORCH_NAMES = {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16"}
RSS_LIMIT_MB = 256
REPEATS = 5  # the fast tools run this many times, taking turns; the best wall time counts (numpy runs once)


# ---- data -----------------------------------------------------------------------------------


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 raw bits, round to nearest even (how the project's dump stores bf16)."""
    bits = x.view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _write_npy_streaming(path: Path, shape, dtype, fill) -> None:
    """Writes an .npy of `shape` chunk by chunk; fill(start, count) returns float32 values."""
    total = int(np.prod(shape))
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": tuple(shape)}
        )
        step = 1 << 24
        for start in range(0, total, step):
            f.write(np.asarray(fill(start, min(step, total - start))).astype(dtype, copy=False).tobytes())


def generate(root: Path, total_bytes: int, shapes=SHAPES, seed: int = 0) -> list[dict]:
    """Golden and mine manifest dumps (docs/dump-format.md) of about total_bytes together.
    bf16 tensors are stored as raw bits (<u2) with `torch.bfloat16` declared in the record."""
    rng = np.random.default_rng(seed)
    pool = 1 << 24
    base = rng.standard_normal(2 * pool, dtype=np.float32)
    noise = rng.standard_normal(2 * pool, dtype=np.float32)
    for side in ("golden", "mine"):
        (root / side / "tensors").mkdir(parents=True, exist_ok=True)
    records, written, i, misses = [], 0, 0, 0
    while misses < len(shapes):
        shape, short = shapes[i % len(shapes)]
        storage = {"fp16": np.float16, "bf16": np.uint16, "fp32": np.float32}[short]
        size = int(np.prod(shape)) * np.dtype(storage).itemsize
        if records and written + 2 * size > total_bytes * 1.1:
            misses += 1
            i += 1
            continue
        misses = 0
        scale = np.float32(1.0 + (i % 5))

        def values(start, count, with_noise, _s=scale, _short=short):
            off = (start // 7 + 12345 * len(records)) % pool  # cheap, varied, deterministic
            v = base[off : off + count] * _s
            if with_noise:
                v = v * (1 + np.float32(1e-3) * noise[off : off + count])
            return _bf16_bits(v) if _short == "bf16" else v

        name = f"tensors/{i:07d}.output.0.npy"
        _write_npy_streaming(root / "golden" / name, shape, storage, lambda s, c: values(s, c, False))
        _write_npy_streaming(root / "mine" / name, shape, storage, lambda s, c: values(s, c, True))
        records.append(
            {
                "type": "tensor",
                "seq": i,
                "kind": "op",
                "op_key": f"layer{i}/linear#0",
                "op": "aten.mm.default",
                "io": "output",
                "index": 0,
                "file": name,
                "dtype": TORCH_NAMES[short],
                "shape": list(shape),
            }
        )
        written += 2 * size
        i += 1
        if written >= total_bytes:
            break
    for side in ("golden", "mine"):
        with open(root / side / "manifest.jsonl", "w") as f:
            f.write(
                json.dumps({"type": "header", "format": "diagnose-dump", "version": 1, "producer": "compare_bench"})
                + "\n"
            )
            for r in records:
                f.write(json.dumps(r) + "\n")
            f.write(json.dumps({"type": "end", "records": len(records)}) + "\n")
    return records


def generate_big(root: Path, pair_bytes: int) -> list[dict]:
    n = pair_bytes // 2 // 4  # fp32 elements per side
    return generate(root, pair_bytes, shapes=[((n,), "fp32")])


# ---- tools ----------------------------------------------------------------------------------

PLAIN_C = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  static uint64_t buf[1 << 17];  /* 1 MiB */
  uint64_t sum = 0, bytes = 0;
  for (int a = 1; a < argc; ++a) {
    int fd = open(argv[a], O_RDONLY);
    if (fd < 0) { perror(argv[a]); return 1; }
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) {
      size_t words = (size_t)r / 8;
      for (size_t i = 0; i < words; ++i) sum += buf[i];
      bytes += (uint64_t)r;
    }
    close(fd);
  }
  printf("%llu %llu\n", (unsigned long long)bytes, (unsigned long long)sum);
  return 0;
}
"""

NUMPY_BASELINE = textwrap.dedent(r"""
    import json, sys
    import numpy as np
    EPS = np.float32(2.0 ** -23)
    out = {}
    def load(path, dtype):
        a = np.load(path)
        if dtype == "torch.bfloat16":  # raw bits, as torch's .float() would widen them
            return (a.astype(np.uint32) << 16).view(np.float32).ravel()
        return a.astype(np.float32).ravel()
    for gpath, mpath, dtype in json.loads(sys.argv[1]):
        g = load(gpath, dtype)
        m = load(mpath, dtype)
        gn = max(float(np.linalg.norm(g)), 1e-8); mn = max(float(np.linalg.norm(m)), 1e-8)
        cos = float(np.dot(g / np.float32(gn), m / np.float32(mn)))
        mask = np.abs(g) > EPS
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(mask, np.abs(m / g - 1), 0)
        ab = np.where(mask, np.abs(m - g), 0)
        pg = np.exp(g - g.max()); pg /= pg.sum()
        lq = (m - m.max()) - np.log(np.exp(m - m.max()).sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            kl = max(0.0, float(np.sum(np.where(pg > 0, pg * (np.log(pg) - lq), 0))))
        red = float(np.sqrt(np.sum((m - g) ** 2) / np.sum(g * g)))
        out[gpath] = dict(cosine=round(cos, 10), max_rel=float(rel.max()), mean_rel=float(rel.mean()),
                          max_abs=float(ab.max()), mean_abs=float(ab.mean()), kl=kl, red=red,
                          gmax=float(g.max()), gmin=float(g.min()), gmean=float(g.mean()),
                          mmax=float(m.max()), mmin=float(m.min()), mmean=float(m.mean()))
    print(json.dumps(out))
""")


def run_measured(args, cwd=None) -> tuple[float, float, str, int, float]:
    """(wall seconds, peak RSS MB, stdout, exit status, CPU seconds) of one child process.

    Peak RSS comes from GNU time when present: a child forked straight from this (large)
    Python process would otherwise be charged for the parent's pages until it execs."""
    gnu_time = shutil.which("time") if os.path.exists("/usr/bin/time") else None
    rss_file = None
    if gnu_time:
        fd, rss_file = tempfile.mkstemp(suffix=".rss")
        os.close(fd)
        args = ["/usr/bin/time", "-o", rss_file, "-f", "%M %U %S"] + list(args)
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    rc = proc.returncode
    cpu = float("nan")
    if rss_file:
        lines = [line.split() for line in Path(rss_file).read_text().splitlines()]
        lines = [x for x in lines if len(x) == 3 and x[0].isdigit()]
        os.unlink(rss_file)
        rss_mb = int(lines[-1][0]) / 1024.0 if lines else float("nan")
        cpu = float(lines[-1][1]) + float(lines[-1][2]) if lines else cpu
    else:
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    if rc not in (0, 1):
        sys.stderr.write(err.decode(errors="replace")[-3000:])
    return wall, rss_mb, out.decode(errors="replace"), rc, cpu


def best_of_turns(repeats: int, commands: list) -> list[tuple[float, float, str, int, float]]:
    """Runs the commands in turn, `repeats` rounds, so that every tool meets the same moments of
    a machine whose speed drifts (shared hosts do). Per command: the run with the least wall
    time, with the highest peak RSS seen; the first failing run if one fails."""
    runs = [[] for _ in commands]
    for _ in range(repeats):
        for i, args in enumerate(commands):
            if runs[i] and runs[i][-1][3] not in (0, 1):
                continue
            runs[i].append(run_measured(args))
    results = []
    for r in runs:
        failed = [x for x in r if x[3] not in (0, 1)]
        if failed:
            results.append(failed[0])
            continue
        best = min(r, key=lambda x: x[0])
        results.append((best[0], max(x[1] for x in r)) + best[2:])
    return results


def plain_pass_command(work: Path, files: list[str]) -> tuple[list[str], str]:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        src, exe = work / "plain_pass.c", work / "plain_pass"
        src.write_text(PLAIN_C)
        if subprocess.run([cc, "-O2", "-o", str(exe), str(src)], capture_output=True).returncode == 0:
            return [str(exe)] + files, "C read()+sum, 1 thread, 1 MiB reads"
    code = (
        "import sys,numpy as np\nt=0\nfor p in sys.argv[1:]:\n f=open(p,'rb')\n while True:\n"
        "  b=f.read(1<<20)\n  if not b: break\n  t+=int(np.frombuffer(b[:len(b)//8*8],np.uint64).sum())\nprint(t)"
    )
    return [sys.executable, "-c", code] + files, "numpy chunked read+sum, 1 thread (no C compiler)"


def find_binary(explicit: str | None) -> str:
    if explicit:
        return explicit
    if os.environ.get("DIAGNOSE_BIN"):
        return os.environ["DIAGNOSE_BIN"]
    default = REPO / "build" / "cli" / "diagnose"
    if default.exists():
        return str(default)
    found = sorted(glob.glob(str(REPO / "build*" / "cli" / "diagnose")), key=os.path.getmtime)
    if not found:
        sys.exit("diagnose binary not found: build it or pass --bin / set DIAGNOSE_BIN")
    return found[-1]


def check_agreement(result_json: Path, numpy_out: dict, root: Path) -> list[str]:
    """diagnose's numbers against the float32 numpy baseline (loose: float32 reductions)."""
    res = json.loads(result_json.read_text())
    rows = [r for g in res["groups"] for r in g["rows"]]
    problems = []
    if len(rows) != len(numpy_out):
        problems.append(f"diagnose wrote {len(rows)} rows, numpy compared {len(numpy_out)} tensors")
    by_file = {os.path.basename(k): v for k, v in numpy_out.items()}
    for r in rows:
        want = by_file.get(os.path.basename(r["golden_data_path"]))
        if want is None:
            problems.append(f"no numpy result for {r['golden_data_path']}")
            continue
        for col, key in (
            ("cosine_unrounded", "cosine"),
            ("max_absolute_error", "max_abs"),
            ("mean_absolute_error", "mean_abs"),
            ("relative_euclidean_distance", "red"),
            ("golden_max_value", "gmax"),
            ("my_min_value", "mmin"),
        ):
            got = r.get(col)
            if got is None or abs(got - want[key]) > 1e-3 * max(abs(want[key]), 1e-6):
                problems.append(f"{r['golden_data_path']}: {col} diagnose {got} vs numpy {want[key]}")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path, help="where to write the data (kept); default a temp dir (removed)")
    p.add_argument("--quick", action="store_true", help="~200 MB in all")
    p.add_argument("--total-gb", type=float, default=3.0)
    p.add_argument("--big", action="store_true", help="one tensor pair of --big-gb in all; checks peak RSS")
    p.add_argument("--big-gb", type=float, default=4.0)
    p.add_argument("--bin")
    p.add_argument("--threads", type=int, default=0, help="diagnose --threads (0: its default, all cores)")
    p.add_argument("--skip-numpy", action="store_true", help="do not run the numpy baseline")
    args = p.parse_args(argv)

    binary = find_binary(args.bin)
    work = args.dir or Path(tempfile.mkdtemp(prefix="compare_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        shutil.rmtree(work / "golden", ignore_errors=True)
        shutil.rmtree(work / "mine", ignore_errors=True)
        t0 = time.perf_counter()
        if args.big:
            records = generate_big(work, int(args.big_gb * 1e9))
        else:
            total = 0.2e9 if args.quick else args.total_gb * 1e9
            shapes = [((1024, 11008), "fp32"), ((4000, 4096), "fp16"), ((2752, 4096), "bf16")] if args.quick else SHAPES
            records = generate(work, int(total), shapes=shapes)
        files = [str(work / s / r["file"]) for r in records for s in ("golden", "mine")]
        nbytes = sum(os.path.getsize(f) for f in files)
        print(
            f"data: {len(records)} tensor pairs, {nbytes / 1e9:.2f} GB in all (golden + mine), "
            f"written in {time.perf_counter() - t0:.1f} s under {work}"
        )
        largest = max(os.path.getsize(f) for f in files) / 2**20

        # Written data is still being flushed to disk for a while; that writeback would steal CPU
        # time from whichever tool runs first.
        os.sync()
        plain_cmd, plain_desc = plain_pass_command(work, files)
        run_measured(plain_cmd)  # warm the page cache

        numpy_out = None
        numpy_result = None
        if not args.skip_numpy and not args.big:
            pairs = json.dumps(
                [[str(work / "golden" / r["file"]), str(work / "mine" / r["file"]), r["dtype"]] for r in records]
            )
            wall, rss, out, rc, cpu = run_measured([sys.executable, "-c", NUMPY_BASELINE, pairs])
            numpy_out = json.loads(out) if rc == 0 else None
            numpy_result = ("numpy (load, cast to float32, one pass per metric)", wall, rss, cpu)

        out_dir = work / "out"
        shutil.rmtree(out_dir, ignore_errors=True)
        cmd = [
            binary,
            "compare",
            "-gp",
            str(work / "golden"),
            "-mp",
            str(work / "mine"),
            "-o",
            str(out_dir),
            "--json",
            str(work / "result.json"),
            "--quiet",
        ]
        if args.threads:
            cmd += ["--threads", str(args.threads)]
        (p_wall, p_rss, _, _, p_cpu), (wall, rss, _, rc, cpu) = best_of_turns(REPEATS, [plain_cmd, cmd])
        threads = args.threads or os.cpu_count()
        results = [(f"plain pass ({plain_desc}), best of {REPEATS}", p_wall, p_rss, p_cpu)]
        if numpy_result:
            results.append(numpy_result)
        results.append((f"diagnose compare ({threads} threads), best of {REPEATS}", wall, rss, cpu))
        diag_wall, diag_rss = wall, rss

        print("page cache: files were read once before timing; every tool reads them from memory")
        load = os.getloadavg()[0]
        print(
            f"load average {load:.1f} on {os.cpu_count()} cores"
            + (" (busy machine: wall-clock figures are pessimistic; see CPU seconds)" if load > os.cpu_count() else "")
        )
        print(f"{'tool':62s} {'seconds':>8s} {'GB/s':>7s} {'CPU s':>7s} {'peak RSS MB':>12s}")
        for name, w, r, c in results:
            print(f"{name:62s} {w:8.2f} {nbytes / w / 1e9:7.2f} {c:7.2f} {r:12.0f}")
        ok = rc in (0, 1)
        if not ok:
            print(f"diagnose compare exited with {rc}")
        plain_wall = results[0][1]
        diag_cpu = results[-1][3]
        print(
            f"diagnose / plain pass: {plain_wall / diag_wall:.2f}x wall  (target >= 0.5x: "
            f"{'PASS' if plain_wall / diag_wall >= 0.5 else 'FAIL'}); "
            f"{results[0][3] / diag_cpu:.2f}x in CPU seconds"
        )
        if numpy_out is not None:
            np_wall = results[1][1]
            ratio = np_wall / diag_wall
            print(
                f"diagnose / numpy:      {ratio:.1f}x wall  (target >= 20x: {'PASS' if ratio >= 20 else 'FAIL'}); "
                f"{results[1][3] / diag_cpu:.1f}x in CPU seconds"
            )
            problems = check_agreement(work / "result.json", numpy_out, work) if ok else ["no result"]
            print("metrics agree with numpy (1e-3 rel): " + ("yes" if not problems else "NO"))
            for line in problems[:10]:
                print("  " + line)
            ok = ok and not problems
        rss_ok = diag_rss < RSS_LIMIT_MB
        print(
            f"diagnose peak RSS {diag_rss:.0f} MB, largest file {largest:.0f} MB "
            f"(target < {RSS_LIMIT_MB} MB: {'PASS' if rss_ok else 'FAIL'})"
        )
        # Speed depends on the machine and its load: reported, not enforced. Memory is a bound.
        return 0 if ok and rss_ok else 1
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
