"""`python -m diagnose_pytorch run [--spec SPEC] script.py args...`
`python -m diagnose_pytorch ops --from EAGER_RUN_DIR`
`python -m diagnose_pytorch single-op --from EAGER_RUN_DIR --out OUT --backend B ...`
`python -m diagnose_pytorch warm` (the engine's warm parent, warm.py)
`python -m diagnose_pytorch aclgraph-dump --from DUMP_DIR --out OUT` (aclgraph_dump.py)"""

from __future__ import annotations

import argparse
import json
import sys

from .checks.recorded_calls import SingleOpError, list_ops
from .spec import SPEC_ENV, RunSpec, SpecError
from .torch_range import installed_torch, torch_problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m diagnose_pytorch")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run an unmodified script under a run spec")
    run.add_argument("--spec", help=f"run spec JSON (default: ${SPEC_ENV})")
    run.add_argument("script")
    run.add_argument("args", nargs=argparse.REMAINDER)
    ops = commands.add_parser("ops", help="the distinct ops of an eager run's dump, as JSON")
    ops.add_argument("--from", dest="source", required=True, metavar="EAGER_RUN_DIR")
    single = commands.add_parser(
        "single-op", help="each op of an eager run's dump, eager vs compiled alone, on its recorded inputs"
    )
    single.add_argument("--from", dest="source", required=True, metavar="EAGER_RUN_DIR")
    single.add_argument("--out", required=True, metavar="OUT_DIR")
    single.add_argument("--backend", required=True)
    single.add_argument("--device", help="default: the eager run's device")
    single.add_argument("--dtype", choices=("float32", "float64", "float16", "bfloat16"))
    single.add_argument("--switches", metavar="JSON_FILE", help="the run spec's `switches`")
    single.add_argument("--ops", metavar="NAME,...", help="only these ops")
    single.add_argument("--max-calls-per-signature", type=int, default=1, metavar="K")
    single.add_argument(
        "--batch-graphs",
        type=int,
        default=64,
        metavar="N",
        help="at most N one-op graphs compiled together first, with Inductor (0: each op only alone)",
    )
    commands.add_parser("warm", help="fork a child for each run the engine asks for on stdin (warm.py)")
    backend = commands.add_parser(
        "script-backend", help="the backend object a script passes to torch.compile, as module:function (JSON)"
    )
    backend.add_argument("script")
    backend.add_argument("args", nargs=argparse.REMAINDER)
    acl = commands.add_parser(
        "aclgraph-dump", help="TorchAir reduce-overhead/npugraph_ex .pt dumps as .npy files, never unpickled"
    )
    acl.add_argument("--from", dest="source", required=True, metavar="DUMP_DIR")
    acl.add_argument("--out", required=True, metavar="OUT_DIR")
    options = parser.parse_args(argv)
    torch_version = installed_torch()
    if problem := torch_problem(torch_version):
        print(f"diagnose_pytorch: {problem}", file=sys.stderr)
        if torch_version is None:
            return 2
    if options.command == "aclgraph-dump":
        from .dump.aclgraph_dump import to_npy  # the commands import torch after the check above

        written, refused = to_npy(options.source, options.out)
        for line in refused:
            print(f"diagnose_pytorch aclgraph-dump: refused {line}", file=sys.stderr)
        print(f"{len(written)} tensors written to {options.out}, {len(refused)} files refused")
        return 0 if written else 2
    if options.command == "run":
        return _run(options)
    if options.command == "script-backend":
        from .runtime.script_backend import main as script_backend  # imports torch

        return script_backend(options.script, options.args)
    if options.command == "warm":
        from .runtime.warm import serve  # imports torch

        return serve(main)
    try:
        if options.command == "ops":
            print(json.dumps(list_ops(options.source)))
            return 0
        from .checks.single_op import run_single_op  # imports torch (ops does not)

        return run_single_op(options)
    except (SingleOpError, SpecError, OSError) as e:
        print(f"diagnose_pytorch {options.command}: {e}", file=sys.stderr)
        return 2


def _run(options) -> int:
    try:
        spec = RunSpec.load(options.spec) if options.spec else RunSpec.from_env()
    except (SpecError, OSError, ValueError) as e:
        print(f"diagnose_pytorch: {e}", file=sys.stderr)
        return 2
    from .runtime.runner import run_script  # imports torch

    return run_script(spec, options.script, options.args)


if __name__ == "__main__":
    sys.exit(main())
