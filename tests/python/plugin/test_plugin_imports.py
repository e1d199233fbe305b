"""The plugin's imports (plugins/pytorch/README.md, "Code layout"): the packages are layers, each
importing only from the layers below it; no module imports one that imports it back, directly or
round a circle, at the top or inside a function; and an import inside a function says why it is
not at the top (a comment on its line or the line before: torch not importable yet, Dynamo kept
off an eager run, torchair only on some hosts...). Read from the sources with `ast`, nothing
imported."""

import ast
import io
import tokenize
from pathlib import Path

import diagnose_pytorch

PACKAGE = Path(diagnose_pytorch.__file__).resolve().parent


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["diagnose_pytorch", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path, node: ast.AST, known) -> set[str]:
    """The plugin's modules an import statement in module `name` (file `path`) imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    submodules = {f"{base}.{alias.name}" for alias in node.names} & set(known)
    return submodules or ({base} & set(known))


def unresolved_relative_imports() -> list[str]:
    """Relative imports naming no module of the plugin (a module moved to another package)."""
    known = modules()
    unresolved = []
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level and not imported(name, path, node, known):
                unresolved.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return unresolved


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[name] = set().union(*(imported(name, path, node, known) for node in ast.walk(tree))) - {name}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle (its modules, the first repeated at the end), or [] when there is none."""
    done, path = set(), []

    def visit(module: str) -> list[str]:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return []
        path.append(module)
        for target in sorted(graph[module]):
            if circle := visit(target):
                return circle
        path.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        if circle := visit(module):
            return circle
    return []


def test_the_import_graph_is_read():
    graph = import_graph()
    assert {"diagnose_pytorch.spec", "diagnose_pytorch.status"} <= graph["diagnose_pytorch.runtime.session"]
    assert "diagnose_pytorch.inductor_rules_fired" in graph["diagnose_pytorch.dump.inductor_dump"]  # from .. import


# Lowest first: the modules beside __init__.py (spec, status, compat and the helpers every layer
# shares), then each package; the package's own __init__.py and __main__.py (the explicit API and
# the command line) sit on top. A module imports from its own layer or those below it.
LAYERS = ("diagnose_pytorch", "dump", "backends", "checks", "runtime", "entry")


def layer(module: str) -> int:
    parts = module.split(".")
    if module in ("diagnose_pytorch", "diagnose_pytorch.__main__"):
        return LAYERS.index("entry")
    return LAYERS.index(parts[1]) if len(parts) > 2 else 0


def arrows_up(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(target) > layer(module)
    )


def test_layers_import_downwards_only():
    assert not arrows_up(import_graph()), "imports of a higher layer: " + ", ".join(arrows_up(import_graph()))


def test_an_import_of_a_higher_layer_is_found():
    graph = {"diagnose_pytorch.dump.eager_dump": {"diagnose_pytorch.checks.meta_check", "diagnose_pytorch.compat"}}
    assert arrows_up(graph) == ["diagnose_pytorch.dump.eager_dump -> diagnose_pytorch.checks.meta_check"]
    assert (
        layer("diagnose_pytorch.__main__") > layer("diagnose_pytorch.runtime.session") > layer("diagnose_pytorch.spec")
    )


def test_relative_imports_name_modules_of_the_plugin():
    assert not unresolved_relative_imports(), "imports of nothing: " + ", ".join(unresolved_relative_imports())


def test_no_import_circles():
    circle = find_circle(import_graph())
    assert not circle, "import circle: " + " -> ".join(circle)


def test_a_circle_is_found():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) == []


def lazy_imports_without_a_reason(path: Path) -> list[int]:
    source = path.read_text()
    commented = {
        t.start[0] for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT
    }
    explained, lines = set(), []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        imports = [n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in sorted(imports, key=lambda n: n.lineno):
            # a comment on its lines or the line before, or the explained import right above
            if commented.intersection(range(node.lineno - 1, node.end_lineno + 1)) or node.lineno - 1 in explained:
                explained.add(node.end_lineno)
            else:
                lines.append(node.lineno)
    return lines


def test_imports_inside_functions_say_why():
    unexplained = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in modules().values()
        for line in lazy_imports_without_a_reason(path)
    ]
    assert not unexplained, "imports inside functions without a reason: " + ", ".join(unexplained)
