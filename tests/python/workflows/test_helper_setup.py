"""A helper process that cannot set up, through the workflow: single_op_check's batches run the
model script as the eager run did, up to its first compiled call (diagnose_pytorch/main_script.py).
This unguarded script refuses to overwrite the results file its eager run wrote, so the batch
exits before any compiled call: the step's summary and the verdict say what the script did and
what to do, not a bare exit status. A script that reads a variable set only on the eager side
sets up with it, as the eager run did. (The passing case, an unguarded script with a custom op and
its own backend, is examples/unguarded_script in test_standard_workflow.py.)"""

from __future__ import annotations

import json
import os
import sys

from fixtures.workflow_run import run_workflow

MODEL = """\
import argparse
import os
import sys

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
if os.path.exists(args.out):
    sys.exit(f"{args.out} exists: not overwriting it")
compiled = torch.compile(torch.nn.Linear(4, 4))
torch.save(compiled(torch.randn(2, 4)), args.out)
"""

WORKFLOW = """\
name: helper_setup
model: {script: model.py, args: [--out, results.pt], backend: inductor, device: cpu}
steps:
  - id: single_op
    kind: single_op_check
"""


ENV_MODEL = """\
import os

import torch

rows = int(os.environ["CASE_ROWS"])
compiled = torch.compile(torch.nn.Linear(4, 4))
compiled(torch.randn(rows, 4))
"""

ENV_WORKFLOW = """\
name: helper_env
model: {script: model.py, backend: inductor, device: cpu}
steps:
  - id: single_op
    kind: single_op_check
    eager: {env: {CASE_ROWS: "2"}}
"""


def run(diagnose_bin, tmp_path, inductor_cache, model: str, workflow: str):
    """The workflow's report.json and the finished diagnose process."""
    (tmp_path / "model.py").write_text(model)
    env = dict(os.environ, DIAGNOSE_PYTHON=sys.executable, TORCHINDUCTOR_CACHE_DIR=str(inductor_cache))
    done, run_dir = run_workflow(diagnose_bin, tmp_path, workflow, env=env, timeout=600)
    return json.loads((run_dir / "report.json").read_text()), done


def test_a_script_that_exits_before_its_compiled_call_in_a_helper_is_named_in_the_verdict(
    diagnose_bin, tmp_path, inductor_cache
):
    report, done = run(diagnose_bin, tmp_path, inductor_cache, MODEL, WORKFLOW)
    verdict, step = report["verdict"], report["steps"][0]
    assert (verdict["category"], step["status"]) == ("inconclusive", "error"), (done.stdout, done.stderr[-3000:])
    what = (
        "could not set up: model.py exited with status 1 before its first compiled call; its last stderr lines: "
        "results.pt exists: not overwriting it. The single-op check runs the script as the eager run did "
        f"(cd {tmp_path} && python {tmp_path}/model.py --out results.pt) up to its first compiled call"
    )
    assert step["summary"].startswith("the single-op run batch1-") and what in step["summary"], step["summary"]
    # the terminal block says why in its first lines; the whole text is the verdict's summary
    assert what in verdict["summary"] and "could not set up" in done.stdout
    assert "checked no op" not in verdict["summary"]


def test_the_eager_sides_env_reaches_the_helpers_setup(diagnose_bin, tmp_path, inductor_cache):
    report, done = run(diagnose_bin, tmp_path, inductor_cache, ENV_MODEL, ENV_WORKFLOW)
    step = report["steps"][0]
    assert step["status"] == "pass", (step["summary"], done.stderr[-3000:])
    assert step["metrics"]["checked"] > 0
