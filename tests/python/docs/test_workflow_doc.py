"""docs/workflow.md against `diagnose schema`: the key tables hold exactly the keys the schema
has (every step's common keys, each step kind with a table of its own, the command keys of a
`run` step, the top-level section and which of its keys are required, `defaults`, `runner`),
a default the doc gives agrees with the schema's `default` wherever the schema has one, and a
step kind described in prose (a bullet) names each of its own keys there."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest

from fixtures.compare_cli import REPO
from fixtures.workflow_schema import load_schema, step_kinds

DOC = REPO / "docs" / "workflow.md"


@dataclass
class Table:
    heading: str
    columns: list[str]
    rows: list[list[str]]

    def keys(self) -> dict[str, list[str]]:
        """Each key of the first column, with its row (a row may name several keys)."""
        return {key: row for row in self.rows for key in names(row[0])}

    def defaults(self) -> dict[str, str]:
        if "default" not in self.columns:
            return {}
        column = self.columns.index("default")
        return {key: row[column] for key, row in self.keys().items()}


@dataclass
class Doc:
    tables: list[Table]
    bullets: dict[str, str]  # step kind -> its bullet, after the sentence that introduces the list

    def __repr__(self) -> str:
        return f"Doc({len(self.tables)} tables, {len(self.bullets)} kinds in bullets)"


def names(text: str) -> list[str]:
    """The keys a piece of Markdown names in backticks: `key`, `key: value`, `key:`."""
    return [m.group(1) for m in re.finditer(r"`([a-z_][a-z0-9_]*)(?::[^`]*)?`", text)]


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def parse(text: str) -> Doc:
    """The doc's tables (with the heading above each) and the step kinds described in bullets
    (`- **`kind`**`), each with its bullet's text and the sentence that introduces the list."""
    tables, bullets = [], {}
    lines = text.splitlines()
    heading, intro, i = "", "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"\|\s*-", lines[i + 1]):
            columns, rows = cells(line), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            tables.append(Table(heading, columns, rows))
            continue
        bullet = re.match(r"- \*\*`([a-z_]+)`\*\*", line)
        if bullet:
            body = [line]
            while i + 1 < len(lines) and lines[i + 1].startswith("  "):
                i += 1
                body.append(lines[i])
            bullets[bullet.group(1)] = intro + "\n" + "\n".join(body)
        elif line.strip() and not line.startswith("- "):
            intro = line if not intro or not lines[i - 1].strip() else intro + "\n" + line
        i += 1
    return Doc(tables, bullets)


def literal(cell: str):
    """A default cell read as one value (`1`, `false`, `` `local` ``), or None when it is prose
    (a value named by another key, or explained); parenthesised remarks are left out."""
    text = re.sub(r"\([^)]*\)", "", cell).strip()
    m = re.fullmatch(r"`([^`\s]+)`|([\w.+-]+)", text)
    if not m:
        return None
    token = m.group(1) or m.group(2)
    if re.match(r"(defaults|model|runner)\.", token):
        return None  # another key's value, e.g. `defaults.slots`
    try:
        return json.loads(token)
    except ValueError:
        return token


@pytest.fixture(scope="module")
def schema(diagnose_bin) -> dict:
    return load_schema(diagnose_bin)


@pytest.fixture(scope="module")
def doc() -> Doc:
    return parse(DOC.read_text())


def table(doc, heading: str) -> Table:
    found = [t for t in doc.tables if t.heading == heading]
    assert len(found) == 1, f"docs/workflow.md: {len(found)} tables under '{heading}'"
    return found[0]


def kind_tables(doc, kinds) -> dict[str, Table]:
    """The tables under a heading that names one step kind, e.g. 'The CI gate (`gate`)'."""
    found = {}
    for t in doc.tables:
        named = [k for k in names(t.heading) if k in kinds]
        if len(named) == 1:
            assert named[0] not in found, f"two tables for {named[0]}"
            found[named[0]] = t
    return found


def common_keys(kinds) -> set[str]:
    return set.intersection(*(set(k["properties"]) for k in kinds.values()))


def check_defaults(where: str, t: Table, properties: dict) -> list[str]:
    """Where the doc gives a default and the schema property has a `default`, they agree: the
    same value, or (a default the doc explains in words) the schema's value, when it is one
    scalar, named in the cell."""
    problems = []
    for key, cell in t.defaults().items():
        if not cell or key not in properties or "default" not in properties[key]:
            continue
        want = properties[key]["default"]
        value = literal(cell)
        if value is not None:
            if value != want:
                problems.append(f"{where}.{key}: the doc's default {cell!r}, the schema's {want!r}")
        elif not isinstance(want, (dict, list)) and json.dumps(want).strip('"') not in cell:
            problems.append(f"{where}.{key}: the doc's default {cell!r} does not name the schema's {want!r}")
    return problems


def test_every_step_kind_is_documented(schema, doc):
    kinds = step_kinds(schema)
    documented = set(kind_tables(doc, kinds)) | set(doc.bullets)
    assert set(kinds) <= documented, f"not in docs/workflow.md: {sorted(set(kinds) - documented)}"
    unknown = set(doc.bullets) - set(kinds)
    assert not unknown, f"docs/workflow.md describes kinds the schema lacks: {sorted(unknown)}"


def test_the_common_step_keys(schema, doc):
    kinds = step_kinds(schema)
    assert set(table(doc, "Steps").keys()) == common_keys(kinds)


def test_each_kind_table_holds_the_kinds_keys(schema, doc):
    kinds = step_kinds(schema)
    common = set(table(doc, "Steps").keys())
    tables = kind_tables(doc, kinds)
    assert tables, "no step kind has a table"
    problems = []
    for kind, t in tables.items():
        keys = set(kinds[kind]["properties"]) - common
        documented = set(t.keys())
        if documented - keys:
            problems.append(f"{kind}: the doc's table has {sorted(documented - keys)}, the schema does not")
        if keys - documented:
            problems.append(f"{kind}: the schema has {sorted(keys - documented)}, the doc's table does not")
        problems += check_defaults(kind, t, kinds[kind]["properties"])
    assert not problems, "\n".join(problems)


def test_the_run_step_takes_the_command_keys(schema, doc):
    kinds = step_kinds(schema)
    command = set(table(doc, "`model` and command keys").keys())
    own = set(kinds["run"]["properties"]) - common_keys(kinds)
    assert command <= own, f"command keys the run step lacks: {sorted(command - own)}"
    assert set(names(doc.bullets["run"])) >= own - command, "the run step's other keys, in its bullet"


@pytest.mark.parametrize(
    "heading, path",
    [("Top level", ()), ("`defaults`", ("defaults",)), ("`runner`", ("runner",))],
)
def test_section_tables(schema, doc, heading, path):
    section = schema
    for key in path:
        section = section["properties"][key]
    t = table(doc, heading)
    assert set(t.keys()) == set(section["properties"]), heading
    if "required" in t.columns:
        column = t.columns.index("required")
        required = {key for key, row in t.keys().items() if row[column] == "yes"}
        assert required == set(section.get("required", [])), heading
    problems = check_defaults(".".join(path) or "top level", t, section["properties"])
    assert not problems, "\n".join(problems)


def test_kinds_in_prose_name_their_keys(schema, doc):
    """A kind described in a bullet names each of its own keys in it or in the sentence that
    introduces the list (the comparing kinds' shared keys); the `run` bullet's command keys are
    the table's."""
    kinds = step_kinds(schema)
    command = set(table(doc, "`model` and command keys").keys())
    common = common_keys(kinds)
    missing = []
    for kind, text in doc.bullets.items():
        if kind in kind_tables(doc, kinds):
            continue
        documented = set(names(text)) | (command if "command keys" in text else set())
        missing += [
            f"{kind}: its bullet does not name `{key}`"
            for key in sorted(set(kinds[kind]["properties"]) - common - documented)
        ]
    assert not missing, "\n".join(missing)


def test_literal_defaults_are_read_as_values():
    assert literal("1") == 1 and literal("false") is False and literal("`local`") == "local"
    assert literal("`fusion_result.json` (`status.json` for knob `inductor`)") == "fusion_result.json"
    assert literal("what fired in the all-on run") is None and literal("the run's `timeout`") is None
    assert literal("Slurm's") is None and literal("`defaults.slots`") is None


def test_tables_are_found_under_their_headings():
    parsed = parse(DOC.read_text())
    assert any(t.heading == "Steps" for t in parsed.tables) and "compare" in parsed.bullets
