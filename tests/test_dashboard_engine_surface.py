"""The dashboard uses the engine's public API only (issue 15): `import engine` / `from engine import name`, where
the name is in engine/__init__.py's public map, never `from engine.hardware.device import ...` nor
`engine.explore.grid.x`. Read from the source with `ast`, so a new submodule import anywhere in dashboard/ fails."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import engine
from tests.conftest import REPO

DASHBOARD_FILES = sorted((REPO / "dashboard").rglob("*.py"))
# (file, engine module) pairs allowed to reach past the public API, each with its reason. Keep it empty if you can.
ALLOWED_SUBMODULE_IMPORTS: dict[tuple[str, str], str] = {}


def engine_uses(path: Path) -> list[tuple[int, str]]:
    """(line, what) for every engine import and every `engine.<attribute>` read in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {alias.name}") for alias in node.names
                      if alias.name == "engine" or alias.name.startswith("engine.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "engine" or node.module.startswith("engine.")):
            found += [(node.lineno, f"from {node.module} import {alias.name}") for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "engine":
            found.append((node.lineno, f"engine.{node.attr}"))
    return found


def offences(path: Path) -> list[str]:
    bad = []
    relative = str(path.relative_to(REPO))
    for line, use in engine_uses(path):
        where = f"{relative}:{line}: {use}"
        if use == "import engine":
            continue
        if use.startswith("import engine."):
            module = use.split()[1]
        elif use.startswith("from engine import "):
            name = use.rsplit(" ", 1)[1]
            if name not in engine._PUBLIC:
                bad.append(f"{where} (not in engine's public map; add it to engine/__init__.py's _FRONT_END)")
            continue
        elif use.startswith("from "):
            module = use.split()[1]
        else:                                           # engine.<attribute>
            name = use.split(".", 1)[1]
            if name not in engine._PUBLIC:
                bad.append(f"{where} (not a public name of engine)")
            continue
        if (relative, module) not in ALLOWED_SUBMODULE_IMPORTS:
            bad.append(f"{where} (a submodule: import the name from `engine` instead)")
    return bad


@pytest.mark.parametrize("path", DASHBOARD_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_dashboard_file_imports_only_the_engines_public_api(path):
    assert offences(path) == []


def test_the_check_catches_a_submodule_import_and_a_private_name(tmp_path):
    """The checker itself can fail: a file written like the dashboard before issue 15 is refused."""
    folder = REPO / "dashboard" / "_surface_probe_tmp.py"
    folder.write_text("import engine\nfrom engine.hardware.device import Hardware\nfrom engine import Hardware\n"
                      "from engine import _public\nx = engine.explore.grid.sweep_grid\ny = engine.estimate\n")
    try:
        found = offences(folder)
    finally:
        folder.unlink()
    assert [entry.split(": ", 1)[1].split(" (")[0] for entry in found] == [
        "from engine.hardware.device import Hardware", "from engine import _public", "engine.explore"]


def test_every_allowed_exception_is_still_used_and_explained():
    for (relative, module), reason in ALLOWED_SUBMODULE_IMPORTS.items():
        assert reason.strip(), relative
        uses = [use for _, use in engine_uses(REPO / relative)]
        assert any(module in use for use in uses), f"{relative} no longer imports {module}: drop it from the list"


def test_every_public_name_is_listed_in_all_and_resolves_without_naming_a_subpackage():
    assert set(engine._PUBLIC) == set(engine.__all__)
    for name in engine._PUBLIC:
        assert importlib.util.find_spec(f"engine.{name}") is None, f"engine.{name} would shadow a subpackage"
        assert getattr(engine, name) is not None


def test_renamed_public_names_are_the_engines_own_objects():
    from engine.calibration import measurements
    from engine.common import readable
    from engine.decomposition.auto import available
    from engine.explore.hardware_sensitivity import base_value, is_integer
    assert engine.auto_available is available and engine.hardware_base_value is base_value
    assert engine.is_integer_field is is_integer
    assert engine.calibration_measurements is measurements and engine.readable is readable
