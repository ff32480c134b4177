"""Docs name only what exists: every repository path (`engine/...`, `dashboard/...`, `benchmarks/...`,
`tests/...`, `scripts/...`) and every dotted engine name (`engine.results.run.estimate`, `engine.estimate`) in
docs/*.md and README.md. Layouts change (issue 15 moved 38 flat modules into packages); a stale name in a doc
sends a newcomer to a file that is not there."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import REPO

DOCS = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
PATH = re.compile(r"(?<![\w./-])(?:engine|dashboard|benchmarks|tests|scripts)/[\w./-]*[\w/]")
DOTTED = re.compile(r"(?<![\w./-])engine(?:\.[A-Za-z_]\w*)+")


def mentions(pattern: re.Pattern) -> list[tuple[str, str]]:
    """(doc file name, mention) for every match in the docs, each once."""
    return sorted({(doc.name, match) for doc in DOCS for match in pattern.findall(doc.read_text())})


def resolves(dotted: str) -> bool:
    """The longest importable module prefix, then attributes for the rest (engine.estimate: a public name)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_docs_are_there():
    assert len(DOCS) > 10 and (REPO / "docs" / "architecture.md") in DOCS


@pytest.mark.parametrize("doc, path", mentions(PATH))
def test_every_path_named_in_the_docs_exists(doc, path):
    assert (REPO / path).exists(), f"{doc} names {path}, which does not exist"


def test_every_dotted_engine_name_in_the_docs_resolves():
    stale = [f"{doc}: {name}" for doc, name in mentions(DOTTED) if not resolves(name)]
    assert stale == []


def test_the_readers_find_a_stale_path_and_a_stale_name():
    text = "see `engine/decompose.py` and engine/grid.py, `engine.grid.sweep_points`, engine.estimate's result."
    assert PATH.findall(text) == ["engine/decompose.py", "engine/grid.py"]
    assert DOTTED.findall(text) == ["engine.grid.sweep_points", "engine.estimate"]
    assert not (REPO / "engine/decompose.py").exists()
    assert not resolves("engine.grid.sweep_points") and resolves("engine.explore.grid.sweep_points")
    assert resolves("engine.estimate") and not resolves("engine.no_such_name")
