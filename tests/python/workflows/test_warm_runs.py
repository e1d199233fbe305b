"""Runs forked from the warm parent (runner: {warm: true}, orchestrator/exec/warm_launcher.h,
plugins/pytorch/diagnose_pytorch/runtime/warm.py) behave as plain processes: their own pid, process group,
cwd, environment and logs, their exit status or signal, a timeout that kills them, and the same
verdict; a parent that dies leaves the runs to plain processes, with the reason in report.json."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fixtures.workflow_run import run_workflow

MODEL = """\
import atexit, json, os, random, signal, sys, time
import numpy, torch

parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(b"\\0")
with open(os.path.join(os.environ["RECORD_DIR"], "runs.jsonl"), "a") as runs:
    runs.write(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0), "cwd": os.getcwd(),
                           "argv": sys.argv, "greeting": os.environ.get("GREETING"),
                           "spec": os.environ.get("DIAGNOSE_RUN_SPEC"),
                           "random": random.random(), "numpy": numpy.random.rand(),
                           "forked": b"warm" in parent}) + "\\n")
print("to stdout"); print("to stderr", file=sys.stderr)
what = sys.argv[1] if len(sys.argv) > 1 else ""
if what == "wait_for_ctrl_c":
    atexit.register(lambda: open(os.path.join(os.environ["RECORD_DIR"], "atexit.txt"), "w").write("ran"))
    print("buffered, flushed at exit", end="")
    open(os.path.join(os.environ["RECORD_DIR"], "waiting"), "w").close()
    time.sleep(60)
if what == "kill_parent" and b"warm" in parent:
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(30)
if what == "exit3":
    sys.exit(3)
if what == "abort":
    os.kill(os.getpid(), signal.SIGABRT)
if what == "sleep":
    time.sleep(60)
torch.manual_seed(0)
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()))
model(torch.randn(4, 8))
"""


def workflow(warm: bool, args: list[str], timeout: int = 0) -> str:
    side = f"{{args: {json.dumps(args)}" + (f", timeout: {timeout}}}" if timeout else "}")
    return f"""\
name: warm_runs
model: {{script: model.py, backend: inductor, device: cpu, cwd: work, env: {{GREETING: hello}}}}
runner: {{warm: {str(warm).lower()}}}
steps:
  - id: eager_device
    kind: eager_device_vs_cpu
    golden: {side}
"""


def model_env(directory: Path, inductor_cache) -> dict:
    """The engine's environment: the test's python as the model's, its runs recorded in `directory`."""
    return dict(
        os.environ,
        DIAGNOSE_PYTHON=sys.executable,
        RECORD_DIR=str(directory),
        TORCHINDUCTOR_CACHE_DIR=str(inductor_cache),
    )


def run(diagnose_bin, directory, inductor_cache, warm: bool, args=(), timeout=0):
    (directory / "work").mkdir(parents=True, exist_ok=True)
    (directory / "model.py").write_text(MODEL)
    env = model_env(directory, inductor_cache)
    done, run_dir = run_workflow(diagnose_bin, directory, workflow(warm, list(args), timeout), env=env, timeout=300)
    report = json.loads((run_dir / "report.json").read_text())
    records = [json.loads(line) for line in (directory / "runs.jsonl").read_text().splitlines()]
    return done, report, records


def test_a_forked_run_is_a_process_of_its_own_with_the_same_verdict(diagnose_bin, tmp_path, inductor_cache):
    done, cold, cold_records = run(diagnose_bin, tmp_path / "cold", inductor_cache, warm=False)
    done, warm, records = run(diagnose_bin, tmp_path / "warm", inductor_cache, warm=True)
    assert warm["verdict"] == cold["verdict"], done.stderr[-3000:]
    assert [s["status"] for s in warm["steps"]] == [s["status"] for s in cold["steps"]]
    runs = warm["steps"][0]["runs"]
    assert {r["launch"] for r in runs} == {"warm_fork"}, runs
    assert {r["launch"] for r in cold["steps"][0]["runs"]} == {"process"}
    assert cold["steps"][0]["runs"][0]["launch_reason"] == "runner.warm is off"
    for record in records:
        assert record["forked"]
        assert record["pid"] == record["pgid"] == record["sid"]  # a session and process group of its own
        assert record["pid"] != os.getpid()
        assert record["cwd"] == str(tmp_path / "warm" / "work")
        assert record["greeting"] == "hello"
        assert record["argv"] == [str(tmp_path / "warm" / "model.py")]
        assert record["argv"] == [a.replace("/cold/", "/warm/") for a in cold_records[0]["argv"]]
    assert len({r["spec"] for r in records}) == len(records)  # each its own DIAGNOSE_RUN_SPEC
    # seeded from os.urandom as a fresh process's, not the parent's state
    assert len({r["random"] for r in records}) == len({r["numpy"] for r in records}) == len(records)
    for r in runs:
        assert "to stdout" in open(r["stdout"]).read()
        assert "to stderr" in open(r["stderr"]).read()
    # the same dump, file for file, and the same tensors
    warm_dump, cold_dump = (Path(report["steps"][0]["runs"][0]["dump_dir"]) for report in (warm, cold))
    warm_files = sorted(p.relative_to(warm_dump) for p in warm_dump.rglob("*") if p.is_file())
    assert warm_files and warm_files == sorted(p.relative_to(cold_dump) for p in cold_dump.rglob("*") if p.is_file())
    for name in warm_files:
        if name.suffix == ".npy":
            assert (warm_dump / name).read_bytes() == (cold_dump / name).read_bytes(), name


def test_the_single_op_checks_processes_are_forked(diagnose_bin, tmp_path, inductor_cache):
    """The op listing and the single-op batches are plugin commands a warm parent forks too."""
    (tmp_path / "work").mkdir()
    (tmp_path / "model.py").write_text(MODEL)
    text = """\
name: warm_single_op
model: {script: model.py, backend: inductor, device: cpu, cwd: work}
steps:
  - id: single_op
    kind: single_op_check
"""
    done, run_dir = run_workflow(diagnose_bin, tmp_path, text, env=model_env(tmp_path, inductor_cache), timeout=300)
    step = json.loads((run_dir / "report.json").read_text())["steps"][0]
    assert step["status"] == "pass", (step["summary"], done.stderr[-3000:])
    launches = {r["name"]: r["launch"] for r in step["runs"]}
    assert {"ops", "batch1-1"} <= launches.keys() and set(launches.values()) == {"warm_fork"}, launches


def test_exit_status_signal_and_timeout_of_a_forked_run(diagnose_bin, tmp_path, inductor_cache):
    expected = {"exit3": ("failed", 3, None), "abort": ("crashed", None, 6), "sleep": ("timed_out", None, 15)}
    for what, (status, exit_code, killed_by) in expected.items():
        done, report, records = run(
            diagnose_bin, tmp_path / what, inductor_cache, warm=True, args=[what], timeout=20 if what == "sleep" else 0
        )
        golden = next(r for r in report["steps"][0]["runs"] if r["name"] == "golden")
        assert golden["launch"] == "warm_fork", golden
        assert (golden["status"], golden["exit_code"], golden["signal"]) == (status, exit_code, killed_by), golden
        assert records[0]["forked"]


def test_a_parent_that_dies_fails_its_runs_and_leaves_later_ones_to_processes(diagnose_bin, tmp_path, inductor_cache):
    done, report, records = run(diagnose_bin, tmp_path, inductor_cache, warm=True, args=["kill_parent"])
    golden = next(r for r in report["steps"][0]["runs"] if r["name"] == "golden")
    assert golden["launch"] == "warm_fork", golden
    assert golden["status"] == "crashed", done.stderr[-3000:]
    assert golden["error"].startswith("the warm process died (killed by signal Killed) during the run"), golden
    # golden killed its parent and died with it
    assert records[0]["forked"] and not os.path.exists(f"/proc/{records[0]['pid']}"), records
    target = next(r for r in report["steps"][0]["runs"] if r["name"] == "target")
    assert target["launch"] == "process" and target["launch_reason"].startswith("the warm process died"), target


def test_ctrl_c_stops_a_forked_run_as_it_stops_a_process(diagnose_bin, tmp_path, inductor_cache):
    """The interrupted child runs its atexit handlers and flushes its output, and ends as the process does."""
    ended = {}
    for warm in (False, True):
        directory = tmp_path / str(warm)
        engine = start_engine(diagnose_bin, directory, inductor_cache, warm, ["wait_for_ctrl_c"], "waiting")
        engine.send_signal(signal.SIGINT)
        engine.wait(timeout=60)
        (run_dir,) = (directory / "runs").iterdir()
        state = json.loads((run_dir / "state.json").read_text())
        golden = next(r for r in state["steps"][0]["runs"] if r["name"] == "golden")
        assert golden["launch"] == ("warm_fork" if warm else "process"), golden
        if golden["signal"] != 9:  # a process whose interpreter outlived kill_grace was killed first
            assert (directory / "atexit.txt").read_text() == "ran", warm
            assert open(golden["stdout"]).read().endswith("buffered, flushed at exit"), warm
        ended[warm] = (golden["status"], golden["exit_code"], golden["signal"], tail(open(golden["stderr"]).read()))
    # the plugin's runner records the KeyboardInterrupt and returns 1 (the forked run ends without
    # finalising the interpreter: never killed); the process may take longer than kill_grace to
    # finalise its interpreter on a loaded machine and be killed (9) instead
    assert ended[True][:3] == ("interrupted", 1, None), ended
    assert ended[False][:3] in (("interrupted", 1, None), ("interrupted", None, 9)), ended
    if ended[False][1] == 1:
        assert ended[True][3] == ended[False][3], ended


def tail(stderr: str) -> str:
    """What a run's stderr ends with, less the lines that name a run's own paths."""
    return "\n".join(line for line in stderr.splitlines()[-3:] if "/" not in line)


def start_engine(diagnose_bin, directory: Path, inductor_cache, warm: bool, args: list[str], started: str):
    """diagnose on the workflow in `directory`, in the background, once the model wrote `started` there."""
    (directory / "work").mkdir(parents=True, exist_ok=True)
    (directory / "model.py").write_text(MODEL)
    (directory / "wf.yaml").write_text(workflow(warm, args))
    env = model_env(directory, inductor_cache)
    engine = subprocess.Popen([str(diagnose_bin), "wf.yaml", "-q"], cwd=directory, env=env)
    deadline = time.monotonic() + 120
    while not (directory / started).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return engine


def test_a_forked_run_dies_with_the_engine(diagnose_bin, tmp_path, inductor_cache):
    engine = start_engine(diagnose_bin, tmp_path, inductor_cache, True, ["sleep"], "runs.jsonl")
    (record,) = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()][:1]
    assert record["forked"]
    engine.kill()
    engine.wait()
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{record['pid']}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(f"/proc/{record['pid']}")
