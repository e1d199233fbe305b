"""docs/run-spec.md against the plugin's side of the contract: its spec.json table lists exactly
the fields of spec.py's RunSpec (nested ones as `dump.level`...) with their types, and its
status.json table exactly the fields status.py writes (the C++ test RunSpecDoc holds the
spec.json table against runspec/'s RunSpec)."""

from __future__ import annotations

import dataclasses
import json
import re

from diagnose_pytorch import status
from diagnose_pytorch.spec import Checks, DumpSpec, Isolation, RunSpec, Switches
from fixtures.compare_cli import REPO

DOC = REPO / "docs" / "run-spec.md"
NESTED = {"Switches": Switches, "DumpSpec": DumpSpec, "Checks": Checks, "Isolation": Isolation}
ROW = re.compile(r"^\| `([a-z_.]+)` \| ([^|]+) \|")


def documented(heading: str) -> dict[str, str]:
    """The table under the heading starting with `heading`: each field's type as written."""
    rows, inside = {}, False
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            inside = line.startswith("## " + heading)
        match = ROW.match(line)
        if inside and match:
            rows[match[1]] = match[2].strip()
    return rows


def doc_type(annotation: str) -> str:
    """spec.py's annotation in the document's words: `list[int] | None` is `list of int or null`."""
    kinds = []
    for part in annotation.split(" | "):
        if part == "None":
            kinds.append("null")
        elif part.startswith("list["):
            kinds.append("list of " + part[5:-1])
        else:
            kinds.append("object" if part in NESTED or part == "dict" else part)
    return " or ".join(kinds)


def spec_fields() -> dict[str, str]:
    fields = {}
    for field in dataclasses.fields(RunSpec):
        fields[field.name] = doc_type(field.type)
        nested = NESTED.get(field.type.replace(" | None", ""))
        for inner in dataclasses.fields(nested) if nested else ():
            fields[f"{field.name}.{inner.name}"] = doc_type(inner.type)
    return fields


def test_the_spec_table_is_spec_py():
    assert documented("spec.json") == spec_fields()


def test_the_status_table_is_what_status_py_writes():
    assert list(documented("status.json")) == list(status.FIELDS)


def test_status_py_writes_only_the_fields_it_lists(tmp_path):
    run = status.RunStatus(tmp_path / "status.json", {})
    run.record_exit_code(0)
    run.record_configuration({})
    run.record_truth({})
    run.record_isolation({})
    run.record_inductor_rules({})
    run.record_inductor_buffers(0, 1, [{"buffer": "buf0"}])
    run.finish("ok")
    assert list(json.loads((tmp_path / "status.json").read_text())) == list(status.FIELDS)
