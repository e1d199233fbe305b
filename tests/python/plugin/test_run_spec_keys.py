"""The run spec's keys held equal on both sides: every plugin side of a step in `diagnose schema`
(`target:`, `golden:`, `referee:`, `eager:`, `compiled:`... of the diagnostic kinds, whose keys
steps/plugin_runs/plugin_run.cc copies into the run's spec.json) takes exactly the fields of the plugin's
RunSpec (plugins/pytorch/diagnose_pytorch/spec.py), `switches` and `dump` exactly those of
Switches and DumpSpec, `checks` a map that can hold Checks' fields; the types agree, and so do
the values both enumerate (mode, dtypes, dump levels, dump sides)."""

from __future__ import annotations

import dataclasses

import pytest

from diagnose_pytorch.spec import DUMP_LEVELS, FLOAT_DTYPES, Checks, DumpSpec, RunSpec, SpecError, Switches
from fixtures.workflow_schema import load_schema, object_form, step_kinds

# How a side's process is started (docs/workflow.md's command keys), not what the plugin is told.
COMMAND_KEYS = {"args", "argv", "shell", "env", "cwd", "timeout", "retries", "outputs"}
# Written by the orchestrator for every run (output_dir) or for each trial of subgraph_isolate
# (isolation), or fixed by the format (version).
NOT_SIDE_KEYS = {"output_dir", "isolation", "version"}
# Sides that also run a command (fusion_bisect's): there `dump` may instead be where the command
# leaves its dump, a path.
COMMAND_SIDES = {"fusion_bisect.golden", "fusion_bisect.target"}


def fields(kind) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(kind)}


def schema_type(prop: dict) -> str:
    """The Python type a schema property stands for: str, bool, int, float, list[...], dict."""
    kind = prop.get("type")
    if isinstance(kind, list) or (kind is None and "enum" in prop) or kind == "string":
        return "str"  # a scalar read as text, or one of the enumerated words
    if kind == "array":
        return f"list[{schema_type(prop['items'])}]"
    return {"boolean": "bool", "integer": "int", "number": "float", "object": "dict"}[kind]


def python_type(field: dataclasses.Field) -> str:
    """A field's annotation without `| None` (spec.py's annotations are strings)."""
    return field.type.replace(" | None", "")


def dump_spec(name: str, properties: dict) -> dict | None:
    """The keys of a side's dump spec."""
    form = object_form(properties["dump"])
    if name in COMMAND_SIDES:
        assert any(a.get("type") == ["string", "number", "boolean"] for a in properties["dump"]["anyOf"]), name
    assert form is not None and form.get("additionalProperties") is False, f"{name}.dump"
    return form["properties"]


@pytest.fixture(scope="module")
def sides(diagnose_bin) -> dict[str, dict]:
    """Every plugin side of every step kind, by `kind.key`: a mapping form with `switches`."""
    found = {}
    for kind, step in step_kinds(load_schema(diagnose_bin)).items():
        for key, prop in step["properties"].items():
            form = object_form(prop)
            if form is not None and "switches" in form["properties"]:
                found[f"{kind}.{key}"] = form["properties"]
    return found


def test_the_diagnostic_kinds_have_plugin_sides(sides):
    assert {"graph_dump_compare.target", "graph_dump_compare.golden", "eager_device_vs_cpu.target"} <= set(sides)
    assert COMMAND_SIDES <= set(sides)


def test_a_side_takes_the_run_spec_fields(sides):
    want = set(fields(RunSpec)) - NOT_SIDE_KEYS
    for name, properties in sides.items():
        assert set(properties) - COMMAND_KEYS == want, name


def test_switches_take_the_switches_fields(sides):
    for name, properties in sides.items():
        form = object_form(properties["switches"])
        assert form is not None and form.get("additionalProperties") is False, f"{name}.switches"
        assert set(form["properties"]) == set(fields(Switches)), f"{name}.switches"


def test_dump_takes_the_dump_spec_fields(sides):
    for name, properties in sides.items():
        dump = dump_spec(name, properties)
        if dump is not None:
            assert set(dump) == set(fields(DumpSpec)), f"{name}.dump"


def test_checks_is_a_map_that_names_the_checks(sides):
    """`checks` is a free map in C++ (map_schema): any Checks field fits; its description is
    the one place the schema names them."""
    for name, properties in sides.items():
        checks = properties["checks"]
        assert checks["type"] == "object" and "properties" not in checks, name
        assert checks.get("additionalProperties", True) is not False, name
        for field in fields(Checks):
            assert field in checks["description"], f"{name}.checks does not mention {field}"


def test_types_agree(sides):
    outer = set(fields(RunSpec)) - NOT_SIDE_KEYS - {"switches", "dump", "checks"}
    for name, properties in sides.items():
        pairs = [(key, properties[key], fields(RunSpec)[key]) for key in sorted(outer)]
        switches = object_form(properties["switches"])["properties"]
        pairs += [(f"switches.{key}", prop, fields(Switches)[key]) for key, prop in switches.items()]
        dump = dump_spec(name, properties)
        if dump is not None:
            pairs += [(f"dump.{key}", prop, fields(DumpSpec)[key]) for key, prop in dump.items()]
        for key, prop, field in pairs:
            assert schema_type(prop) == python_type(field), f"{name}.{key}"


def test_enumerated_values_agree(sides):
    for name, properties in sides.items():
        dump = dump_spec(name, properties)
        if dump is not None:
            assert set(dump["level"]["enum"]) == {*DUMP_LEVELS, "auto"}, name
            assert set(dump["io"]["items"]["enum"]) == set(DumpSpec().io), name
        assert set(properties["dtype"]["enum"]) == set(properties["autocast"]["enum"]) == set(FLOAT_DTYPES), name
        assert set(properties["mode"]["enum"]) == {"eager", "compiled"}, name


def test_the_plugin_accepts_every_enumerated_value_and_refuses_others(sides, tmp_path):
    name, properties = next(iter(sides.items()))
    dump = dump_spec(name, properties)

    def accepted(**spec) -> bool:
        try:
            RunSpec.from_dict({"output_dir": str(tmp_path), **spec})
        except SpecError:
            return False
        return True

    for mode in properties["mode"]["enum"]:
        assert accepted(mode=mode), mode
    assert not accepted(mode="graph")
    for dtype in properties["dtype"]["enum"]:
        assert accepted(dtype=dtype) and accepted(autocast=dtype), dtype
    assert not accepted(dtype="int8") and not accepted(autocast="int8")
    configurations = [{"mode": "eager"}, {"backend": "aot_eager"}, {"backend": "inductor"}]
    for level in dump["level"]["enum"]:
        assert any(accepted(dump={"level": level}, **c) for c in configurations), level
    assert not accepted(dump={"level": "everything"})
    for side in dump["io"]["items"]["enum"]:
        assert accepted(dump={"io": [side]}), side
    assert not accepted(dump={"io": ["grad"]})
