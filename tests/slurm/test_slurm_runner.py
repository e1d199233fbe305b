"""End to end: diagnose with the slurm runner on the one-node test cluster. Stand-in
models (tests/support/scripts/model.py and python -c) keep every job short."""

from __future__ import annotations

import json
import re
import shlex
import signal
import time
from datetime import datetime
from pathlib import Path

from conftest import (
    MODEL,
    PYTHON,
    jobs,
    jobs_named,
    only_run_dir,
    queued_ids,
    read_state,
    run_diagnose,
    runs_of,
    slurm,
    slurm_runner,
    stop,
    wait_for,
    write_workflow,
)

EAGER_GRAPH_COMPARE = f"""\
    name: precision
    model:
      argv: [{PYTHON}, {MODEL}]
    defaults:
      slots: 2
    steps:
      - id: eager
        kind: run
        args: [--mode, eager, --dump, "${{run.dump_dir}}"]
        outputs: ["${{run.dump_dir}}/00_embedding.npy"]
      - id: graph
        kind: run
        args: [--mode, graph, --dump, "${{run.dump_dir}}", --perturb, relu]
      - id: compare
        kind: compare
        golden: ${{steps.eager.dump_dir}}
        target: ${{steps.graph.dump_dir}}
        diagnoses: localized_op_defect
    """


def report(run_dir: Path) -> dict:
    return json.loads((run_dir / "report.json").read_text())


def test_workflow_gives_the_same_verdict_on_slurm_and_locally(cluster, diagnose_bin, tmp_path):
    results = {}
    for kind in ("slurm", "local"):
        directory = tmp_path / kind
        directory.mkdir()
        write_workflow(directory, EAGER_GRAPH_COMPARE, slurm_runner(cluster))
        done = run_diagnose(diagnose_bin, directory, "run", "--runner", kind, "-v", "wf.yaml")
        run_dir = only_run_dir(directory)
        results[kind] = (done, run_dir)
    slurm_done, slurm_dir = results["slurm"]
    local_done, local_dir = results["local"]
    assert local_done.returncode == 1, local_done.stderr
    assert slurm_done.returncode == local_done.returncode, slurm_done.stderr
    assert "eager/main | model: mode=eager" in slurm_done.stderr  # -v follows the job's log
    slurm_report, local_report = report(slurm_dir), report(local_dir)
    assert slurm_report["verdict"]["category"] == local_report["verdict"]["category"] == "localized_op_defect"
    slurm_steps = {s["id"]: s for s in read_state(slurm_dir)["steps"]}
    local_steps = {s["id"]: s for s in read_state(local_dir)["steps"]}
    assert slurm_steps["compare"]["status"] == local_steps["compare"]["status"] == "fail"
    assert slurm_steps["compare"]["metrics"] == local_steps["compare"]["metrics"]
    assert [f["op"] for f in slurm_steps["compare"]["findings"]] == [
        f["op"] for f in local_steps["compare"]["findings"]
    ]

    for step in ("eager", "graph"):
        (slurm_run,), (local_run,) = slurm_steps[step]["runs"], local_steps[step]["runs"]
        assert "job_id" not in local_run
        job = [j for j in jobs() if j["JobId"] == slurm_run["job_id"]]
        assert job and job[0]["JobName"] == f"diagnose-{step}-main" and job[0]["JobState"] == "COMPLETED"
        assert f"model: mode={step}" in Path(slurm_run["stdout"]).read_text()
        script = (slurm_dir / "steps" / step / "slurm-job.sh").read_text()
        assert script.startswith("#!/bin/sh\n")
        assert shlex.split(script.splitlines()[-1])[:5] == ["exec", PYTHON, str(MODEL), "--mode", step], script
        assert (
            f"submitted job {slurm_run['job_id']} with sbatch "
            in (slurm_dir / "steps" / step / "slurm-jobs.log").read_text()
        )


def test_parallel_runs_are_concurrent_jobs_up_to_max_jobs(cluster, diagnose_bin, tmp_path):
    log = tmp_path / "model.log"
    trials = "".join(f"              t{i}: {{args: [--mode, t{i}]}}\n" for i in range(4))
    write_workflow(
        tmp_path,
        f"""\
        name: trials
        model:
          argv: [{PYTHON}, {MODEL}, --dump, "${{run.dump_dir}}", --sleep, "2", --log, {log}]
        steps:
          - id: trials
            kind: run
            runs:
{trials}        """,
        slurm_runner(cluster, max_jobs=2),
    )
    done = run_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    assert done.returncode == 0, done.stderr
    run_dir = only_run_dir(tmp_path)
    runs = runs_of(run_dir, "trials")
    assert len({r["job_id"] for r in runs}) == 4

    # The model's own clock: two at a time, never three.
    events = []
    for line in log.read_text().splitlines():
        mode, event, when, _pid = line.split()
        events.append((float(when), 1 if event == "start" else -1, mode))
    running, most = 0, 0
    for _when, change, _mode in sorted(events):
        running += change
        most = max(most, running)
    assert most == 2, log.read_text()

    # Slurm's record: each run was its own job, and jobs ran at the same time.
    records = {}
    for line in cluster["jobcomp"].read_text().splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("JobId") in {r["job_id"] for r in runs}:
            records[fields["JobId"]] = (
                datetime.fromisoformat(fields["StartTime"]),
                datetime.fromisoformat(fields["EndTime"]),
                fields["Name"],
            )
    assert sorted(name for _s, _e, name in records.values()) == [f"diagnose-trials-t{i}" for i in range(4)]
    spans = sorted(records.values())
    assert spans[1][0] < spans[0][1], spans  # the first two overlap


def test_interrupted_engine_cancels_its_jobs_and_no_other(
    cluster, diagnose_bin, tmp_path, start_diagnose, time_limit_run
):
    write_workflow(
        tmp_path,
        f"""\
        name: cancel
        model:
          argv: [{PYTHON}, -c, "import time; time.sleep(120)"]
        steps:
          - id: long
            kind: run
            runs: {{a: {{}}, b: {{}}}}
        """,
        slurm_runner(cluster, max_jobs=2),
    )
    process = start_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    run_dir = wait_for(lambda: next((p for p in (tmp_path / "runs").glob("*") if p.is_dir()), None), 30, "run dir")

    def both_running():
        ids = [r.get("job_id") for r in runs_of(run_dir, "long")] if (run_dir / "state.json").exists() else []
        if len(ids) != 2 or not all(ids):
            return None
        states = {j["JobId"]: j["JobState"] for j in jobs()}
        return ids if all(states.get(i) == "RUNNING" for i in ids) else None

    ids = wait_for(both_running, 60, "both jobs running")
    (sleeper,) = runs_of(only_run_dir(time_limit_run["dir"]), "sleeper")
    other = sleeper["job_id"]
    assert {j["JobId"]: j["JobState"] for j in jobs()}[other] == "RUNNING", "the time-limit job should be running"

    code, _out, err = stop(process, signal.SIGINT)
    assert code == 130, err
    assert not (set(ids) & queued_ids()), f"jobs left behind: {set(ids) & queued_ids()}"
    states = {j["JobId"]: j["JobState"] for j in jobs()}
    assert [states[i] for i in ids] == ["CANCELLED", "CANCELLED"]
    assert other in queued_ids(), "a job of another engine was cancelled"
    state = read_state(run_dir)
    assert state["interrupted"] is True
    assert {r["status"] for r in runs_of(run_dir, "long")} == {"interrupted"}


def test_resume_reattaches_to_a_job_that_outlived_its_engine(cluster, diagnose_bin, tmp_path, start_diagnose):
    log = tmp_path / "model.log"
    write_workflow(
        tmp_path,
        f"""\
        name: reattach
        model:
          argv: [{PYTHON}, {MODEL}, --mode, once, --dump, "${{run.dump_dir}}", --sleep, "5", --log, {log}]
        steps:
          - id: model
            kind: run
            outputs: ["${{run.dump_dir}}/04_output.npy"]
        """,
        slurm_runner(cluster),
    )
    process = start_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    run_dir = wait_for(lambda: next((p for p in (tmp_path / "runs").glob("*") if p.is_dir()), None), 30, "run dir")

    def running_job():
        runs = runs_of(run_dir, "model") if (run_dir / "state.json").exists() else []
        job_id = runs[0].get("job_id") if runs else None
        return job_id if job_id and log.exists() else None

    job_id = wait_for(running_job, 60, "the job to start")
    process.kill()  # the engine dies without a chance to cancel anything
    process.communicate(timeout=30)
    assert job_id in queued_ids()

    done = run_diagnose(diagnose_bin, tmp_path, "wf.yaml", "--resume", str(run_dir))
    assert done.returncode == 0, done.stderr
    (run,) = runs_of(run_dir, "model")
    assert run["status"] == "succeeded" and run["job_id"] == job_id
    assert [j["JobId"] for j in jobs_named("diagnose-model-main", tmp_path)] == [job_id], "submitted a second time"
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["start", "end"]
    assert f"attached to job {job_id}" in (run_dir / "steps" / "model" / "slurm-jobs.log").read_text()


def test_job_killed_by_slurm_is_reported_and_retried(cluster, diagnose_bin, tmp_path, start_diagnose):
    marker = tmp_path / "first-attempt"
    # sleeps on its first attempt only (the marker file says whether there was one)
    flaky = (
        "import os, sys, time; m = sys.argv[1]; first = not os.path.exists(m); open(m, 'a').close(); "
        "time.sleep(120 if first else 0)"
    )
    write_workflow(
        tmp_path,
        f"""\
        name: retry
        model:
          argv: [{PYTHON}, -c, "{flaky}", {marker}]
          retries: 1
        steps:
          - id: flaky
            kind: run
        """,
        slurm_runner(cluster),
    )
    process = start_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    first = wait_for(
        lambda: (
            [j for j in jobs_named("diagnose-flaky-main", tmp_path) if j["JobState"] == "RUNNING"]
            if marker.exists()
            else None
        ),
        60,
        "the first attempt to run",
    )
    slurm("scancel", first[0]["JobId"])  # as an administrator or a preemption would
    out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    run_dir = only_run_dir(tmp_path)
    (run,) = runs_of(run_dir, "flaky")
    assert run["status"] == "succeeded" and run["attempts"] == 2 and run["job_id"] != first[0]["JobId"]
    history = (run_dir / "steps" / "flaky" / "slurm-jobs.log").read_text()
    assert f"Slurm job {first[0]['JobId']} was cancelled outside diagnose (CANCELLED" in history
    assert "attempt 2: submitted job" in history


def test_ranks_run_through_srun_as_torchrun_starts_them(cluster, diagnose_bin, tmp_path):
    """Two ranks of real torch.distributed (gloo) through srun --ntasks=2: each gets torchrun's
    variables from Slurm's, they meet at MASTER_ADDR:MASTER_PORT and all_reduce; the plugin's own
    tools run once, in a world of one rank. ./diagnose_pytorch stands in for the plugin: `sh -m
    diagnose_pytorch run|ops` is the plugin's command line to the runner."""
    all_reduce = (
        "import os, pathlib, torch, torch.distributed as dist; dist.init_process_group('gloo'); "
        "t = torch.tensor([dist.get_rank() + 1.0] * 2); dist.all_reduce(t); "
        "d = pathlib.Path(os.environ['DIAGNOSE_DUMP_DIR'], 'rank' + os.environ['RANK']); d.mkdir(parents=True); "
        "names = ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR'); "
        "(d / 'env').write_text(' '.join(os.environ[n] for n in names) + ' ' + str(t.tolist())); "
        "dist.destroy_process_group()"
    )
    (tmp_path / "diagnose_pytorch").write_text(
        f'if [ "$1" = run ]; then exec {PYTHON} -c "{all_reduce}"; fi\n'
        'echo "$RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR" > "$DIAGNOSE_DUMP_DIR/tool-env"\n'
    )
    write_workflow(
        tmp_path,
        """\
        name: ranks
        model:
          argv: [sh, -m, diagnose_pytorch]
        steps:
          - id: multi
            kind: run
            args: [run, model.py]
          - id: tool
            kind: run
            args: [ops, model.py]
        """,
        slurm_runner(cluster, ranks=2),
    )
    done = run_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    assert done.returncode == 0, done.stderr
    steps = only_run_dir(tmp_path) / "steps"
    ranks = sorted((p.name, (p / "env").read_text()) for p in (steps / "multi" / "dump").iterdir())
    assert ranks == [("rank0", "0 2 0 2 127.0.0.1 [3.0, 3.0]"), ("rank1", "1 2 1 2 127.0.0.1 [3.0, 3.0]")], ranks
    assert (steps / "tool" / "dump" / "tool-env").read_text() == "0 1 0 127.0.0.1\n"
    assert "srun --ntasks=2" not in (steps / "tool" / "slurm-job.sh").read_text()


def test_configuration_errors_before_any_work(cluster, diagnose_bin, tmp_path):
    model = f"model:\n  argv: [{PYTHON}, -c, 'pass']\nsteps:\n  - {{id: a, kind: run}}\n"
    write_workflow(tmp_path, model, slurm_runner(cluster, partition="gpux"))
    checked = run_diagnose(diagnose_bin, tmp_path, "validate", "--runner", "wf.yaml")
    assert checked.returncode == 2
    assert re.search(
        r"wf\.yaml:5:\d+: error: unknown Slurm partition 'gpux'; the cluster has: " + cluster["partition"],
        checked.stderr,
    ), checked.stderr
    ran = run_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    assert ran.returncode == 2 and "unknown Slurm partition 'gpux'" in ran.stderr
    assert not (tmp_path / "runs").exists()
    fixed = run_diagnose(diagnose_bin, tmp_path, "validate", "--runner", "--partition", cluster["partition"], "wf.yaml")
    assert fixed.returncode == 0, fixed.stderr

    # Options the controller refuses: found by validate --runner, reported by the run.
    write_workflow(tmp_path, model, slurm_runner(cluster, extra_args=["--gres=gpu:1"]))
    checked = run_diagnose(diagnose_bin, tmp_path, "validate", "--runner", "wf.yaml")
    assert checked.returncode == 2
    assert "error: Slurm rejects jobs with this runner's options: " in checked.stderr, checked.stderr
    ran = run_diagnose(diagnose_bin, tmp_path, "wf.yaml")
    assert ran.returncode == 3, ran.stderr
    (run,) = runs_of(only_run_dir(tmp_path), "a")
    assert run["status"] == "not_started" and run["error"].startswith("sbatch rejected the job: "), run


def test_bisection_trials_run_as_concurrent_jobs_and_find_the_same_culprit(cluster, diagnose_bin, tmp_path):
    standin = MODEL.parent / "fusion_standin.py"
    workflow = f"""\
        name: bisect
        model:
          argv: [{PYTHON}, {standin}, --switch-file, "${{switch_file}}", --dump, "${{run.dump_dir}}", --sleep, "1"]
        defaults:
          slots: 4
        steps:
          - id: fusion
            kind: fusion_bisect
            confirmations: 1
            golden: {{argv: [{PYTHON}, {standin}, --faults, "", --dump, "${{run.dump_dir}}"]}}
            target: {{args: [--faults, "wrong:GeluFusionPass"]}}
        """
    verdicts, run_dirs = {}, {}
    for kind in ("slurm", "local"):
        directory = tmp_path / kind
        directory.mkdir()
        write_workflow(directory, workflow, slurm_runner(cluster, max_jobs=4))
        done = run_diagnose(diagnose_bin, directory, "wf.yaml", "--runner", kind, timeout=300)
        assert done.returncode == 1, done.stderr
        run_dirs[kind] = only_run_dir(directory)
        verdicts[kind] = report(run_dirs[kind])["verdict"]
    assert verdicts["slurm"]["category"] == verdicts["local"]["category"] == "fusion_defect"
    assert verdicts["slurm"]["culprit"] == verdicts["local"]["culprit"] == "GeluFusionPass"

    runs = runs_of(run_dirs["slurm"], "fusion")
    ids = {r["job_id"] for r in runs}
    assert len(ids) == len(runs) > 4
    spans = []
    for line in cluster["jobcomp"].read_text().splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("JobId") in ids:
            spans.append((datetime.fromisoformat(fields["StartTime"]), datetime.fromisoformat(fields["EndTime"])))
    assert len(spans) == len(ids)
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most >= 3, spans  # the trials of a round ran as concurrent jobs


def test_zz_job_killed_at_its_time_limit_is_reported_with_slurms_reason(cluster, time_limit_run):
    """Last: waits for the run started with the session (see conftest.time_limit_run)."""
    process = time_limit_run["process"]
    out, err = process.communicate(timeout=max(1, 170 - (time.monotonic() - time_limit_run["started"])))
    elapsed = time.monotonic() - time_limit_run["started"]
    assert process.returncode == 3, err
    assert 55 < elapsed, elapsed
    run_dir = only_run_dir(time_limit_run["dir"])
    (run,) = runs_of(run_dir, "sleeper")
    assert run["status"] == "timed_out"
    assert run["error"] == f"Slurm job {run['job_id']} was stopped at its time limit (TIMEOUT, reason TimeLimit)"
    assert "DUE TO TIME LIMIT" in Path(run["stderr"]).read_text()
    assert "sleeping" in Path(run["stdout"]).read_text()
    assert "--time=1" in (run_dir / "steps" / "sleeper" / "slurm-jobs.log").read_text()
