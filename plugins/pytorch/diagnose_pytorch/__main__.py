"""`python -m diagnose_pytorch run [--spec SPEC] script.py args...`"""
from __future__ import annotations

import argparse
import sys

from .spec import SPEC_ENV, RunSpec, SpecError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m diagnose_pytorch")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run an unmodified script under a run spec")
    run.add_argument("--spec", help=f"run spec JSON (default: ${SPEC_ENV})")
    run.add_argument("script")
    run.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    try:
        spec = RunSpec.load(options.spec) if options.spec else RunSpec.from_env()
    except (SpecError, OSError, ValueError) as e:
        print(f"diagnose_pytorch: {e}", file=sys.stderr)
        return 2
    from .runner import run_script
    return run_script(spec, options.script, options.args)


if __name__ == "__main__":
    sys.exit(main())
