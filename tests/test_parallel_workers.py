"""How scripts/test.sh spreads the suite over pytest-xdist workers (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import pytest_xdist_make_scheduler, worker_scope


def test_browser_tests_share_one_scope_and_others_get_their_own():
    browser = ["tests/browser/test_sidebar_browser.py::test_x[default]", "tests/browser/test_views_browser.py::test_y"]
    assert {worker_scope(nodeid) for nodeid in browser} == {"tests/browser"}
    others = ["tests/test_specs.py::test_a", "tests/test_specs.py::test_b", "tests/dashboard/test_app.py::test_c",
              "tests/test_browser_like.py::test_d"]
    assert [worker_scope(nodeid) for nodeid in others] == others


class Config:
    """The options pytest-xdist's controller reads: --dist and two local workers (what -n 2 becomes)."""

    def __init__(self, dist: str):
        self.values = {"dist": dist, "tx": ["2*popen"]}

    def getvalue(self, name):
        return self.values.get(name)


def test_scheduler_applies_only_to_loadgroup():
    assert pytest_xdist_make_scheduler(Config("loadfile"), None) is None
    assert pytest_xdist_make_scheduler(Config("no"), None) is None


def test_scheduler_groups_browser_tests_under_loadgroup():
    pytest.importorskip("xdist")
    scheduler = pytest_xdist_make_scheduler(Config("loadgroup"), None)
    assert scheduler._split_scope("tests/browser/test_views_browser.py::test_y") == "tests/browser"
    assert scheduler._split_scope("tests/test_specs.py::test_a") == "tests/test_specs.py::test_a"
