#!/usr/bin/env python3
"""What a diagnosis costs against one compiled run of the same model.

For each selected example the standard workflow (examples/<name>/workflow.yaml) runs under
`diagnose`, and beside it, in the same invocation and with the same Inductor cache, one plain
compiled run of the same model: its script with its args and env, every torch.compile call
given the workflow's backend, as its own process. Printed per workflow run:

  processes  model processes the steps started (a run shared from another step counts once)
  configs    distinct run configurations (spec.json without its output paths)
  cpu_s      user + system seconds of diagnose and everything it started
  wall_s     wall seconds of the diagnosis
  x_run      wall_s as a multiple of the plain compiled run's wall seconds
  x_params   bytes left in the run directory as a multiple of the model's parameter bytes

  python bench/diagnosis_bench.py                       # every examples/*/workflow.yaml and llama4
  python bench/diagnosis_bench.py fusion_rules mlp --repeat 2
  options: --repeat N (diagnoses per example; the cache is warm from the second),
           --bin PATH (else $DIAGNOSE_BIN, build/cli/diagnose), --work DIR (kept),
           --json FILE (the rows as JSON)

Not part of the test suite: the whole set takes most of an hour on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "plugins" / "pytorch"
sys.path.insert(0, str(REPO / "tests" / "python"))
from fixtures.workflow_run import processes_started  # noqa: E402  (what the workflow tests count)

# Workflows besides examples/*/workflow.yaml, by the name the command line selects them with.
EXTRA_WORKFLOWS = {
    "precision_loss_tanh": REPO / "examples" / "precision_loss" / "workflow_tanh_gelu.yaml",
    "llama4": REPO / "examples" / "hf_causal_lm" / "workflow_llama4.yaml",
}
COLUMNS = ("example", "rep", "verdict", "processes", "configs", "cpu_s", "wall_s", "run_wall_s", "x_run", "x_params")


# ---- the plain compiled run (`--compiled-run BACKEND DTYPE REPORT SCRIPT ARGS...`) ------------


def compiled_run(backend: str, dtype: str, report: str, script: str, args: list[str]) -> int:
    """Runs `script` as `python script args` would, every torch.compile call given `backend`
    and, for a module, cast to `dtype` with its floating inputs ("-": none) as the plugin casts;
    writes the compiled modules' parameter bytes (each tensor counted once) to `report`."""
    sys.path.insert(0, str(PLUGIN))
    import torch
    from torch.utils import _pytree as pytree

    from diagnose_pytorch.backends import spec_backend
    from diagnose_pytorch.main_script import compile_redirected, exit_status, run_as_main

    original = torch.compile
    parameters: dict[int, int] = {}

    cast_to = None if dtype == "-" else getattr(torch, dtype)

    def cast(value):
        return value.to(cast_to) if isinstance(value, torch.Tensor) and value.is_floating_point() else value

    def compile_under(model, options):
        if isinstance(model, torch.nn.Module) and cast_to is not None:
            model.to(dtype=cast_to)
            model.register_forward_pre_hook(lambda _, a, k: pytree.tree_map(cast, (a, k)), with_kwargs=True)
        if isinstance(model, torch.nn.Module):
            for p in model.parameters():
                parameters[p.data_ptr()] = p.numel() * p.element_size()
        options = {k: v for k, v in options.items() if k != "backend"}
        return original(model, backend=compiled_with, **options)

    if backend == "torchair":  # the real torchair's NPU backend (over the CANN stand-in in the examples)
        from diagnose_pytorch.backends.torchair import import_torchair

        compiled_with = import_torchair().get_npu_backend()
    else:
        compiled_with = spec_backend.resolve(backend)

    code = 0
    try:
        with compile_redirected(compile_under):
            run_as_main(script, args)
    except SystemExit as exit_:
        code = exit_status(exit_)
    finally:  # also when the script raises: its time to the failure is still measured
        Path(report).write_text(json.dumps({"parameter_bytes": sum(parameters.values())}))
    return code


# ---- measuring ------------------------------------------------------------------------------


def timed(argv: list[str], cwd: Path, env: dict, log: Path) -> tuple[int, float, float]:
    """Runs argv to its end: (exit status, wall seconds, CPU seconds of it and its children)."""
    started = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, time.monotonic() - started, usage.ru_utime + usage.ru_stime


def expanded(text: str, workflow_dir: Path) -> str:
    """A value of the workflow with ${workflow_dir} and ${env.NAME} replaced as the engine
    replaces them (docs/workflow.md); `$$` is a `$`."""

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        if name == "workflow_dir":
            return str(workflow_dir)
        return os.environ.get(name[4:], "") if name.startswith("env.") else match.group(0)

    return re.sub(r"\$\$|\$\{([^}]*)\}", one, text)


def model_section(workflow: Path) -> dict:
    """The workflow's model: its own keys over those of the workflows it extends, with the
    script made absolute and its env's values expanded."""
    document = yaml.safe_load(workflow.read_text()) or {}
    model = dict(document.get("model") or {})
    if "script" in model:
        model["script"] = str((workflow.parent / model["script"]).resolve())
    if "env" in model:
        model["env"] = {k: expanded(str(v), workflow.parent.resolve()) for k, v in model["env"].items()}
    if document.get("extends"):
        model = {**model_section((workflow.parent / document["extends"]).resolve()), **model}
    return model


def bytes_under(directory: Path) -> int:
    """Bytes of the files under `directory` (links not followed, hard links counted once)."""
    seen, total = set(), 0
    for path in directory.rglob("*"):
        info = path.lstat()
        if path.is_file() and not path.is_symlink() and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_size
    return total


def configuration(spec_path: Path, run_dir: Path) -> str:
    """A run's configuration: its spec without where it writes; a file the spec names inside the
    run directory (a switch file, an op list) by its content."""

    def canonical(value):
        if isinstance(value, dict):
            return {k: canonical(v) for k, v in sorted(value.items()) if k != "output_dir"}
        if isinstance(value, list):
            return [canonical(v) for v in value]
        if isinstance(value, str) and value.startswith(str(run_dir)):
            path = Path(value)
            return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<run dir>"
        return value

    spec = json.loads(spec_path.read_text())
    return json.dumps(canonical(spec), sort_keys=True)


def diagnose_once(binary: Path, workflow: Path, out: Path, env: dict) -> dict:
    before = set(out.iterdir()) if out.exists() else set()
    argv = [str(binary), str(workflow), "--output-dir", str(out), "--quiet"]
    code, wall, cpu = timed(argv, REPO, env, out.parent / f"{out.name}.log")
    new = [p for p in out.iterdir() if p not in before and p.is_dir()]
    if len(new) != 1:
        raise RuntimeError(f"{workflow}: expected one new run directory under {out}, found {len(new)} (exit {code})")
    run_dir = new[0]
    report = json.loads((run_dir / "report.json").read_text())
    configs = {configuration(spec, run_dir) for spec in run_dir.rglob("spec.json")}
    return {
        "verdict": (report.get("verdict") or {}).get("category", f"exit {code}"),
        "processes": processes_started(report),
        "configs": len(configs),
        "cpu_s": cpu,
        "wall_s": wall,
        "bytes": bytes_under(run_dir),
    }


def plain_once(model: dict, work: Path, env: dict) -> dict:
    report = work / "compiled_run.json"
    script = Path(model["script"])
    argv = [env["DIAGNOSE_PYTHON"], str(Path(__file__).resolve()), "--compiled-run", model.get("backend", "inductor")]
    argv += [model.get("dtype") or "-", str(report), str(script), *map(str, model.get("args") or [])]
    # GE writes fusion_result.json under $ASCEND_WORK_PATH (else the working directory, the script's)
    run_env = {**env, "ASCEND_WORK_PATH": str(work), **(model.get("env") or {})}
    code, wall, cpu = timed(argv, script.parent, run_env, work / "compiled_run.log")
    if not report.is_file():
        raise RuntimeError(f"the plain compiled run of {script} exited {code}: {work / 'compiled_run.log'}")
    # A model whose compiled run fails by design (meta_defect) is timed to its failure.
    return {"wall_s": wall, "cpu_s": cpu, "exit": code, **json.loads(report.read_text())}


def bench(name: str, workflow: Path, args, work: Path, env: dict) -> list[dict]:
    model = model_section(workflow)
    example_work = work / name
    example_work.mkdir(parents=True, exist_ok=True)
    rows = []
    for rep in range(1, args.repeat + 1):
        diagnosis = diagnose_once(args.bin, workflow, example_work / "runs", env)
        plain = plain_once(model, example_work, env)  # right after: the same cache, the same moment
        row = {"example": name, "rep": rep, **diagnosis, "run_wall_s": plain["wall_s"], "run_cpu_s": plain["cpu_s"]}
        row["parameter_bytes"] = plain["parameter_bytes"]
        row["x_run"] = diagnosis["wall_s"] / plain["wall_s"]
        row["x_params"] = diagnosis["bytes"] / plain["parameter_bytes"] if plain["parameter_bytes"] else float("nan")
        row["run_exit"] = plain["exit"]
        note = f" plain compiled run exited {plain['exit']} (timed to its failure)" if plain["exit"] else ""
        print(format_row(row) + note, flush=True)
        rows.append(row)
    return rows


# ---- the table ------------------------------------------------------------------------------


def format_cell(column: str, value) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if column.endswith("_s") or column.startswith("x_") else f"{value:.3g}"
    return str(value)


def format_header() -> str:
    return "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS)


def format_row(row: dict) -> str:
    return "| " + " | ".join(format_cell(c, row[c]) for c in COLUMNS) + " |"


def workflows(selected: list[str]) -> dict[str, Path]:
    available = {p.parent.name: p for p in sorted((REPO / "examples").glob("*/workflow.yaml"))}
    available.update(EXTRA_WORKFLOWS)
    unknown = [name for name in selected if name not in available]
    if unknown:
        raise SystemExit(f"unknown example(s) {', '.join(unknown)}; choose among {', '.join(available)}")
    return {name: available[name] for name in selected} if selected else available


def find_binary(given: str | None) -> Path:
    for candidate in (given, os.environ.get("DIAGNOSE_BIN"), REPO / "build" / "cli" / "diagnose"):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    raise SystemExit("diagnose not found: build it, or give --bin PATH or $DIAGNOSE_BIN")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compiled-run"]:
        return compiled_run(argv[1], argv[2], argv[3], argv[4], argv[5:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", nargs="*", help="example names (default: all, llama4 included)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--bin")
    parser.add_argument("--work", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    args.bin = find_binary(args.bin)
    selected = workflows(args.examples)
    with tempfile.TemporaryDirectory(prefix="diagnosis_bench-") as temporary:
        work = Path(args.work).resolve() if args.work else Path(temporary)
        env = {
            **os.environ,
            "DIAGNOSE_PYTHON": os.environ.get("DIAGNOSE_PYTHON", sys.executable),
            "TORCHINDUCTOR_CACHE_DIR": os.environ.get("TORCHINDUCTOR_CACHE_DIR", str(work / "inductor-cache")),
        }
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n{format_header()}", flush=True)
        rows = []
        for name, workflow in selected.items():
            try:
                rows += bench(name, workflow, args, work, env)
            except RuntimeError as error:  # one example that cannot be measured stops no other
                print(f"| {name} | error: {error} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
