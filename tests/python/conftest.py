"""Shared helpers: find the `diagnose` binary, run `diagnose compare`, read its outputs,
and check rows against the float64 reference metrics."""
from __future__ import annotations

import csv
import glob
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import reference_metrics as ref  # noqa: E402

CRASH_CODES = {134, 136, 137, 139}  # abort, FPE, kill, segfault as shell-style codes


def find_binary() -> Path | None:
    env = os.environ.get("DIAGNOSE_BIN")
    if env:
        return Path(env)
    default = REPO / "build" / "orchestrator" / "diagnose"
    if default.exists():
        return default
    others = sorted(glob.glob(str(REPO / "build*" / "orchestrator" / "diagnose")), key=os.path.getmtime)
    return Path(others[-1]) if others else None


@pytest.fixture(scope="session")
def diagnose_bin() -> Path:
    path = find_binary()
    if path is None or not path.exists():
        pytest.fail("diagnose binary not found: build it (cmake --build build --target diagnose) "
                    "or set DIAGNOSE_BIN", pytrace=False)
    return path


@dataclass
class CompareRun:
    rc: int
    stdout: str
    stderr: str
    out_dir: Path
    result: dict | None = None
    csv_files: list[Path] = field(default_factory=list)

    def rows(self) -> list[dict]:
        return [r for g in (self.result or {}).get("groups", []) for r in g["rows"]]

    def group(self, rank: int, graph: int) -> dict:
        return next(g for g in self.result["groups"] if g["rank"] == rank and g["graph"] == graph)

    def describe(self) -> str:
        return f"rc={self.rc}\nstdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}"


def run_compare(binary: Path, golden, mine, out: Path, *extra, timeout: float = 60) -> CompareRun:
    """Runs `diagnose compare -gp golden -mp mine -o out [extra]` and loads what it wrote."""
    args = [str(binary), "compare"]
    if golden is not None:
        args += ["-gp", str(golden)]
    if mine is not None:
        args += ["-mp", str(mine)]
    if out is not None:
        args += ["-o", str(out)]
    args += [str(a) for a in extra]
    before = set(out.glob("*")) if out is not None and out.exists() else set()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    rc = proc.returncode
    assert rc >= 0 and rc not in CRASH_CODES, f"diagnose crashed: {args}\n{proc.stderr[-3000:]}"
    run = CompareRun(rc, proc.stdout, proc.stderr, out)
    if out is not None and out.exists():
        new = sorted(set(out.glob("*")) - before)
        run.csv_files = [p for p in new if p.suffix == ".csv"]
        results = [p for p in new if p.name.startswith("diagnose_cmp_result_") and p.suffix == ".json"]
        if results:
            run.result = json.loads(results[-1].read_text())
    return run


def read_csv(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [dict(zip(header, r)) for r in reader]
    return header, rows


def json_number(v):
    """JSON numbers, with the contract's "nan"/"inf"/"-inf" strings for non-finite ones."""
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return v


def close(got, expected, rel=1e-6, abs_tol=1e-12) -> bool:
    if expected is None or got is None:
        return got is expected
    got, expected = json_number(got), json_number(expected)
    if math.isnan(expected):
        return math.isnan(got)
    if math.isinf(expected):
        return got == expected
    return abs(got - expected) <= max(rel * abs(expected), abs_tol)


METRIC_NAMES = ["max_relative_error", "mean_relative_error", "max_absolute_error",
                "mean_absolute_error", "kl_divergence", "relative_euclidean_distance", "rmse"]


def check_metrics(row: dict, golden: np.ndarray, mine: np.ndarray, target_short: str | None = None) -> list[str]:
    """Compares one JSON row's metrics with the float64 reference; returns the mismatches."""
    errors = []
    expected = ref.compute(golden, mine)
    g, m = ref.as_f32_values(golden), ref.as_f32_values(mine)
    for name in METRIC_NAMES:
        want = getattr(expected, name)
        abs_tol = 1e-9 if name == "kl_divergence" else 1e-12
        if not close(row.get(name), want, abs_tol=abs_tol):
            errors.append(f"{name}: expected {want!r}, got {row.get(name)!r}")
    if not close(row.get("cosine_unrounded"), expected.cosine_unrounded, rel=0, abs_tol=1e-9):
        errors.append(f"cosine_unrounded: expected {expected.cosine_unrounded!r}, got {row.get('cosine_unrounded')!r}")
    cos = row.get("cosine_similarity")
    if cos is None or abs(cos - expected.cosine_similarity) > 1.0000001e-10:
        errors.append(f"cosine_similarity: expected {expected.cosine_similarity!r}, got {cos!r}")
    elif row.get("cosine_unrounded") is not None and cos != round(row["cosine_unrounded"], 10):
        errors.append(f"cosine_similarity {cos!r} is not round(cosine_unrounded={row['cosine_unrounded']!r}, 10)")
    if not close(row.get("snr_db"), expected.snr_db, rel=1e-6, abs_tol=1e-9):
        errors.append(f"snr_db: expected {expected.snr_db!r}, got {row.get('snr_db')!r}")
    for side, x in (("golden", g), ("my", m)):
        mx, mn, mean = ref.side_stats(x)
        for stat, want, tol in (("max", mx, 0), ("min", mn, 0),
                                ("mean", mean, 1e-9 * max(1.0, float(np.abs(x).max())))):
            got = row.get(f"{side}_{stat}_value")
            if not close(got, want, rel=1e-6, abs_tol=tol):
                errors.append(f"{side}_{stat}_value: expected {want!r}, got {got!r}")
    if target_short is not None:
        max_ulp, mean_ulp = ref.ulp_errors(g, m, target_short)
        for name, want in (("max_ulp_error", max_ulp), ("mean_ulp_error", mean_ulp)):
            if not close(row.get(name), want, rel=1e-6, abs_tol=1e-9):
                errors.append(f"{name} ({target_short}): expected {want!r}, got {row.get(name)!r}")
    return errors


def path_parts(data_path: str) -> tuple[str, str | None, int | None]:
    """`{file},inputs,{i}` -> (basename, "input", i); a plain path -> (basename, None, None)."""
    parts = data_path.rsplit(",", 2)
    if len(parts) == 3 and parts[1] in ("inputs", "outputs") and parts[2].isdigit():
        return os.path.basename(parts[0]), parts[1][:-1], int(parts[2])
    return os.path.basename(data_path), None, None


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "out"
