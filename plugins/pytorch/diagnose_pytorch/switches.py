"""The run spec's global switches (spec.Switches) resolved and put in force once per process:
the fusion switch file's absolute path, exported as $DIAGNOSE_FUSION_SWITCH_FILE for every backend
but TorchAir (which gets it in its CompilerConfig: backends/torchair.py); Inductor's config
overrides with the named rules turned off; and status.json's record of each switch in force."""

from __future__ import annotations

import json
import os

from .inductor_rules import overrides_off
from .spec import FUSION_SWITCH_FILE_ENV


def fusion_switch_path(switches) -> str | None:
    """The fusion switch file's absolute path (links resolved); None without one."""
    return os.path.realpath(switches.fusion_switch_file) if switches.fusion_switch_file else None


def inductor_overrides(switches) -> dict:
    """torch._inductor.config overrides: the spec's own, then its named rules turned off."""
    return {**switches.inductor, **overrides_off(switches.inductor_off)}


def apply_switches(backend: str, switches, status=None) -> None:
    """Exports the fusion switch file for `backend` and, given a status, records every switch
    in force: the switch file (its path as the spec gives it and its content), the Inductor
    overrides, and TorchAir's CompilerConfig fields when the backend is TorchAir."""
    if switches.fusion_switch_file and backend != "torchair":
        os.environ[FUSION_SWITCH_FILE_ENV] = fusion_switch_path(switches)
    if status is None:
        return
    if switches.fusion_switch_file:
        with open(switches.fusion_switch_file) as f:
            content = f.read()
        try:
            content = json.loads(content)
        except ValueError:
            pass  # the backend reports a malformed file; the status keeps its text
        status.record_active_switch("fusion_switch_file", {"path": switches.fusion_switch_file, "content": content})
    if switches.inductor:
        status.record_active_switch("inductor", dict(switches.inductor))
    if switches.torchair and backend == "torchair":
        status.record_active_switch("torchair", dict(switches.torchair))
