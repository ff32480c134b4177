"""Shared fixtures: the bundled workbook, catalog models, and paths to shared calibration data.

Parallel runs (scripts/test.sh: pytest-xdist, `--dist loadgroup`): the browser tests form one group, so one
worker starts the one Streamlit server and Chromium they share; every other test goes to any worker
(pytest_xdist_make_scheduler below).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def devices():
    from engine.hardware.specs import load_specs
    return load_specs()


@pytest.fixture(scope="session")
def llama8b():
    from engine.models import load_model
    return load_model("meta-llama/Llama-3.1-8B")


@pytest.fixture(scope="session")
def llama70b():
    from engine.models import load_model
    return load_model("meta-llama/Llama-3.1-70B")


def worker_scope(nodeid: str) -> str:
    """The unit a test is scheduled in: all browser tests one, any other test its own."""
    return "tests/browser" if nodeid.startswith("tests/browser/") else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`: every test of tests/browser/ on one worker (they share one Streamlit server and one
    Chromium per worker process), any other test on any worker.

    pytest-xdist's own loadgroup groups tests by an `@group` suffix it appends to the node id, which pytest 9.2
    no longer reads back (Node.nodeid comes from Node._id), so the browser tests are grouped by path here.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BrowserTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_scope(nodeid)

    return BrowserTestsTogether(config, log)
