"""The engine's house rules (issue 15, docs/architecture.md): imports run one way through the layers, no
import cycles (function-level imports included), no file over 400 lines, no function over 60 lines. Read from
the source with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

ENGINE = REPO / "engine"
# lower number = lower layer; a module may import its own layer or lower ones, never a higher one
LAYERS = {
    "common": 0,
    "hardware": 1, "models": 1, "workload": 1,
    "kernels": 2,
    "decomposition": 3,
    "estimators": 4,
    "results": 5,
    "explore": 6, "calibration": 6, "serving": 7,
    "cli": 8,
}
MAX_LINES = 400
# Debt being paid off (issue 15): each entry must still be true (a stale entry fails), none may be added.
KNOWN_LONG_FILES: set[str] = set()
MAX_FUNCTION_LINES = 60
# Same rule: "path::qualified name" (methods as Class.method, nested functions as outer.inner), lines from `def`
# to the end of the body (decorators excluded).
KNOWN_LONG_FUNCTIONS: set[str] = set()
KNOWN_CYCLES: list[list[str]] = []


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def engine_modules() -> dict[str, Path]:
    return {module_name(p): p for p in ENGINE.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Engine modules `path` imports, at any depth (function-level imports too)."""
    found = set()
    tree = ast.parse(path.read_text())
    type_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
                 and getattr(node.test, "id", None) == "TYPE_CHECKING" for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue                                   # `if TYPE_CHECKING:` imports never run
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from package import submodule` imports the submodule; `from module import name` the module
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                     for alias in node.names]
        else:
            continue
        for name in names:
            if name.startswith("engine.") and name in known:
                found.add(name)
    return found


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = engine_modules()
    return {name: imports_of(path, set(modules)) - {name} for name, path in modules.items()}


def test_every_engine_package_has_a_layer():
    packages = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").exists()}
    assert packages - set(LAYERS) == set()
    flat = sorted(p.name for p in ENGINE.glob("*.py") if p.name != "__init__.py")
    assert flat == []        # nothing flat beside the packages


def test_imports_run_one_way_through_the_layers(graph):
    upward = sorted(f"{src} -> {dst}" for src, targets in graph.items() for dst in targets
                    if layer_of(src) and layer_of(dst) and LAYERS[layer_of(dst)] > LAYERS[layer_of(src)])
    assert upward == []


def test_no_import_cycles(graph):
    """Tarjan's strongly connected components over the module graph; any component of two or more is a cycle."""
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert sorted(cycles) == sorted(KNOWN_CYCLES)


def test_no_engine_file_over_the_line_limit():
    long = {str(path.relative_to(REPO)) for path in ENGINE.rglob("*.py")
            if len(path.read_text().splitlines()) > MAX_LINES}
    assert long == KNOWN_LONG_FILES


def function_lengths(tree: ast.AST, prefix: str = "") -> dict[str, int]:
    """Qualified name -> lines from `def` to the body's last line, for every function at any depth."""
    lengths = {}
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            lengths[name] = child.end_lineno - child.lineno + 1      # lineno is the `def` line, after decorators
            lengths.update(function_lengths(child, name + "."))
        elif isinstance(child, ast.ClassDef):
            lengths.update(function_lengths(child, prefix + child.name + "."))
        else:
            lengths.update(function_lengths(child, prefix))     # functions under if/try blocks
    return lengths


def test_no_engine_function_over_the_line_limit():
    long = {f"{path.relative_to(REPO)}::{name}" for path in ENGINE.rglob("*.py")
            for name, lines in function_lengths(ast.parse(path.read_text())).items() if lines > MAX_FUNCTION_LINES}
    assert sorted(long - KNOWN_LONG_FUNCTIONS) == [], "new functions over the limit: split them"
    assert sorted(KNOWN_LONG_FUNCTIONS - long) == [], "now short (or gone): remove them from KNOWN_LONG_FUNCTIONS"


def test_function_lengths_count_from_def_and_qualify_names():
    source = ("@decorator\n@another\ndef outer():\n    def inner():\n        pass\n    return inner\n\n"
              "class Box:\n    @property\n    def size(self):\n        return 1\n\n"
              "if True:\n    def guarded():\n        pass\n")
    assert function_lengths(ast.parse(source)) == {"outer": 4, "outer.inner": 2, "Box.size": 2, "guarded": 2}


def test_the_checks_see_a_planted_cycle_and_an_upward_import(tmp_path):
    """The graph reader finds function-level imports (so the cycle and layer checks can fail)."""
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from engine.results.run import estimate\n")
    assert imports_of(source, {"engine.results.run"}) == {"engine.results.run"}



def test_no_module_is_named_like_a_function_or_class_it_defines():
    """Issue 15: `engine.estimate` was a function hiding its own module; no module may share a name it defines
    (engine/explore/layouts.py defines layout_sweep, engine/cli/entry.py defines main)."""
    clashes = []
    for path in ENGINE.rglob("*.py"):
        stem = path.parent.name if path.stem == "__init__" else path.stem
        defined = {node.name for node in ast.parse(path.read_text()).body
                   if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        if stem in defined:
            clashes.append(str(path.relative_to(REPO)))
    assert clashes == []
